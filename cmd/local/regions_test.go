package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
)

// make run's -regions: a product created in one Region's API is counted
// once, and its seller read the same in every Region once replication
// has caught up.
func TestRegionsServeOneGlobalTable(t *testing.T) {
	getenv := config.Overlay(func(string) string { return "" }, localDefaults)
	create, err := config.LoadCreateProduct(getenv)
	require.NoError(t, err)
	get, err := config.LoadGetProduct(getenv)
	require.NoError(t, err)
	relayCfg, err := config.LoadOutboxRelay(getenv)
	require.NoError(t, err)
	stats, err := config.LoadSellerStats(getenv)
	require.NoError(t, err)
	seller, err := config.LoadGetSeller(getenv)
	require.NoError(t, err)
	regions := []string{"us-east-1", "eu-west-1"}
	runners, stop, err := startRegions(t.Context(), regions, 50*time.Millisecond, regional{
		create: create, get: get, relay: relayCfg, stats: stats, seller: seller,
		caller: "", grant: []string{access.AnySeller}, apiAddr: "127.0.0.1:0",
	})
	require.NoError(t, err)
	t.Cleanup(stop)
	require.Len(t, runners, 2)

	const sellerID = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	body := `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`
	for _, r := range runners { // the same key in each Region: one product
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.APIURL+"/products", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"order-42"`)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
	}
	for _, r := range runners {
		var got struct {
			ProductCount int `json:"product_count"`
		}
		deadline := time.Now().Add(time.Minute)
		for got.ProductCount == 0 && time.Now().Before(deadline) {
			resp, err := http.Get(r.APIURL + "/sellers/" + sellerID)
			require.NoError(t, err)
			if resp.StatusCode == http.StatusOK {
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			}
			resp.Body.Close()
			time.Sleep(20 * time.Millisecond)
		}
		assert.Equal(t, 1, got.ProductCount, "%s: the seller's one product", r.APIURL)
	}
}
