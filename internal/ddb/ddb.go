// Package ddb counts the calls the functions' DynamoDB clients make.
package ddb
