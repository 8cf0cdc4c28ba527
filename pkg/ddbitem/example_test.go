package ddbitem_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// A decoder reads every attribute, then checks Err once.
func ExampleRead() {
	type order struct {
		ID    string
		Cents int64
	}
	decode := func(item map[string]types.AttributeValue) (order, error) {
		r := ddbitem.Read(item)
		o := order{ID: r.S("id"), Cents: r.Int("cents")}
		if err := r.Err(); err != nil {
			return order{}, fmt.Errorf("order: %w", err)
		}
		return o, nil
	}
	fmt.Println(decode(map[string]types.AttributeValue{"id": ddbitem.S("o-1"), "cents": ddbitem.N(1999)}))
	fmt.Println(decode(map[string]types.AttributeValue{"id": ddbitem.S("o-2"), "cents": ddbitem.S("1999")}))
	// Output:
	// {o-1 1999} <nil>
	// { 0} order: ddbitem: invalid item: cents is a string, not a number
}
