package money_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/money"
)

func ExampleNew() {
	price, err := money.New(1999, money.EUR)
	if err != nil {
		panic(err)
	}
	fmt.Println(price, price.Cents())

	_, err = money.New(-1, money.EUR)
	fmt.Println(errors.Is(err, money.ErrValidation))
	// Output:
	// 19.99 EUR 1999
	// true
}

func ExampleParse() {
	for _, in := range []struct {
		amount string
		c      money.Currency
	}{{"19.9", money.EUR}, {"1999", money.JPY}, {"1.5", money.KWD}, {"19.999", money.EUR}, {"1.5", money.JPY}} {
		m, err := money.Parse(in.amount, in.c)
		if err != nil {
			fmt.Printf("%s %s: rejected\n", in.amount, in.c)
			continue
		}
		fmt.Printf("%s %s: %d minor units, %s\n", in.amount, in.c, m.Cents(), m)
	}
	// Output:
	// 19.9 EUR: 1990 minor units, 19.90 EUR
	// 1999 JPY: 1999 minor units, 1999 JPY
	// 1.5 KWD: 1500 minor units, 1.500 KWD
	// 19.999 EUR: rejected
	// 1.5 JPY: rejected
}

func ExampleMoney_Allocate() {
	total, _ := money.New(5, money.EUR)
	parts, err := total.Allocate(100, 101, 100, 100)
	if err != nil {
		panic(err)
	}
	fmt.Println(parts)

	// Splitting 100.00 three ways loses no cent; the first share gets it.
	bill, _ := money.New(10000, money.USD)
	parts, _ = bill.Allocate(1, 1, 1)
	fmt.Println(parts)
	// Output:
	// [0.01 EUR 0.02 EUR 0.01 EUR 0.01 EUR]
	// [33.34 USD 33.33 USD 33.33 USD]
}

func ExampleMoney_MarshalJSON() {
	price, _ := money.New(1999, money.EUR)
	b, _ := json.Marshal(price)
	fmt.Println(string(b))

	var back money.Money
	fmt.Println(json.Unmarshal(b, &back), back == price)

	// Floats are never accepted as prices.
	err := json.Unmarshal([]byte(`{"cents":19.99,"currency":"EUR"}`), &back)
	fmt.Println(errors.Is(err, money.ErrValidation))
	// Output:
	// {"cents":1999,"currency":"EUR"}
	// <nil> true
	// true
}
