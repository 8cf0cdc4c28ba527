// Command local runs the products API on this machine: an embedded
// DynamoDB-compatible store, the three tables, and the Lambda handlers on
// a port. `make run` starts it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/local"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run() error {
	apiAddr := flag.String("addr", ":8080", "API listen address; empty runs the store only")
	storeAddr := flag.String("store-addr", "127.0.0.1:8000", "embedded DynamoDB-compatible store listen address")
	flag.Parse()

	getenv := func(k string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return localDefault(k)
	}
	s, err := wire.Load(getenv, config.CreateProduct)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := local.Start(ctx, local.Config{
		APIAddr:   *apiAddr,
		StoreAddr: *storeAddr,
		Endpoint:  os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		Settings:  s,
		Log:       wire.Logger(os.Stderr, s.LogLevel),
	})
	if err != nil {
		return err
	}
	local.Banner(os.Stdout, r)
	select {
	case <-ctx.Done():
	case err = <-r.Err():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Fprintln(os.Stdout, "stopping")
	if cerr := r.Close(shutdown); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// localDefault names the tables when the environment does not.
func localDefault(k string) string {
	switch k {
	case config.ProductsTable.Name:
		return "products"
	case config.IdempotencyTable.Name:
		return "idempotency"
	case config.OutboxTable.Name:
		return "outbox"
	}
	return ""
}
