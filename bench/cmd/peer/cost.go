package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/bench/proxy"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
)

// Prices are the on-demand list prices a run's costs are computed with,
// in US dollars, all for US East (N. Virginia), us-east-1.
type Prices struct {
	// Read is the day the prices were read, Sources where.
	Read    string   `json:"read"`
	Sources []string `json:"sources"`
	Region  string   `json:"region"`
	// DynamoDB on-demand, Standard table class, per request unit.
	WriteRequestUnit float64 `json:"dynamodb_write_request_unit"`
	ReadRequestUnit  float64 `json:"dynamodb_read_request_unit"`
	// Lambda, per request, and per GB-second of duration for arm64 (the
	// template's Architectures) in the first tier (the first 7.5 billion
	// GB-seconds of a month); duration is billed per invocation, rounded
	// up to the next millisecond.
	LambdaRequest      float64 `json:"lambda_request"`
	LambdaGBSecond     float64 `json:"lambda_arm64_gb_second"`
	LambdaArchitecture string  `json:"lambda_architecture"`
	// MemoryMB are the function sizes the Lambda cost is given for.
	MemoryMB []int `json:"lambda_memory_mb"`
}

// prices is the one place the bench's prices live. Read on 2026-12-02 for
// us-east-1:
//
//   - DynamoDB on-demand (Standard table class), since the price cut of
//     2024-11-01: $0.625 per million write request units, $0.125 per
//     million read request units.
//     https://aws.amazon.com/dynamodb/pricing/on-demand/
//   - Lambda: $0.20 per million requests; arm64 duration $0.0000133334
//     per GB-second (first tier: the first 7.5 billion GB-seconds a
//     month; x86_64 is $0.0000166667), billed per 1 ms.
//     https://aws.amazon.com/lambda/pricing/
//
// Both pages fill their price tables in the browser, which this machine
// cannot do; the figures were checked against transcriptions of those
// tables dated 2025-07 to 2026-10, which agree with each other. Free tiers,
// storage, API Gateway and SQS are left out: they are the same for every
// implementation. Check the pages before relying on the figures.
var prices = Prices{
	Read: "2026-12-02",
	Sources: []string{
		"https://aws.amazon.com/dynamodb/pricing/on-demand/",
		"https://aws.amazon.com/lambda/pricing/",
	},
	Region:             "us-east-1",
	WriteRequestUnit:   0.625 / 1e6,
	ReadRequestUnit:    0.125 / 1e6,
	LambdaRequest:      0.20 / 1e6,
	LambdaGBSecond:     0.0000133334,
	LambdaArchitecture: "arm64",
	MemoryMB:           []int{128, 1024},
}

// Units are the capacity units one operation consumed in a step, on the
// step's tables.
type Units struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
}

// Cost is what a step cost: the capacity units the store counted for it
// and what they, and the invocations' measured durations, cost on AWS at
// Prices. Per is what the figures are per: a request (workloads 1 to 3)
// or a distinct event (the consumer).
type Cost struct {
	Per string `json:"per"`
	// ByOperation is the step's units by operation, summed over its
	// tables, as the store counted them (every request, failed conditions
	// and cancelled transactions included).
	ByOperation map[string]Units `json:"units_by_operation"`
	WRU         float64          `json:"wru_per_unit"`
	RRU         float64          `json:"rru_per_unit"`
	DynamoDB    float64          `json:"dynamodb_usd_per_million"`
	// Invocations is Lambda invocations per request or event: 1 for a
	// request; a batch's share for an event.
	Invocations float64 `json:"lambda_invocations_per_unit"`
	// BilledMs is the mean of each invocation's duration, measured around
	// the handler on this machine, rounded up to the next millisecond as
	// Lambda bills it; 0 when the step measured none (the crash).
	BilledMs float64 `json:"billed_ms_per_invocation"`
	// Lambda and Total are per memory size (MB, as in Prices.MemoryMB):
	// requests plus duration, and that plus DynamoDB.
	Lambda map[int]float64 `json:"lambda_usd_per_million"`
	Total  map[int]float64 `json:"total_usd_per_million"`
}

// consumedCapacity reads the store's running totals (GET /consumed),
// straight from the store: the read itself is not counted.
func consumedCapacity(storeURL string) (map[string]map[string]embedded.Units, error) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(storeURL + embedded.ConsumedPath)
	if err != nil {
		return nil, fmt.Errorf("consumed capacity: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("consumed capacity: %s", resp.Status)
	}
	var out map[string]map[string]embedded.Units
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("consumed capacity: %w", err)
	}
	return out, nil
}

// stepUnits is what the tables consumed between two readings, by
// operation, and how many requests of each single-table operation the
// store counted on them.
func stepUnits(before, after map[string]map[string]embedded.Units, tables []string) (map[string]Units, map[string]int) {
	units, requests := map[string]Units{}, map[string]int{}
	for _, t := range tables {
		for op, a := range after[t] {
			b := before[t][op]
			d := Units{Read: a.Read - b.Read, Write: a.Write - b.Write}
			if n := a.Requests - b.Requests; n > 0 || d.Read > 0 || d.Write > 0 {
				u := units[op]
				units[op] = Units{Read: u.Read + d.Read, Write: u.Write + d.Write}
				requests[op] += n
			}
		}
	}
	return units, requests
}

// checkUnits fails the run if the store's count of single-item requests
// on the step's tables differs from the proxy's: the units must be those
// of the requests the proxy counted. A write a running transaction
// refused (TransactionConflictException) reaches no item and consumes
// nothing in the store; AWS does not document what it bills for one.
func checkUnits(c proxy.Counts, storeRequests map[string]int) error {
	for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem"} {
		want := c.Ops[op] - c.Errors[op+" TransactionConflictException"]
		if got := storeRequests[op]; got != want {
			return fmt.Errorf("the store counted units for %d %s requests on the step's tables, the proxy %d (less conflicts): the units are not those of the requests counted", got, op, want)
		}
	}
	return nil
}

// billedMs is the mean of each duration (µs) rounded up to the next
// millisecond, as Lambda bills each invocation.
func billedMs(us []int64) float64 {
	if len(us) == 0 {
		return 0
	}
	var sum int64
	for _, v := range us {
		sum += (v + 999) / 1000
	}
	return float64(sum) / float64(len(us))
}

// newCost prices a step: units over n requests or events, invocations
// Lambda invocations of billed mean duration ms (0: not measured).
func newCost(per string, units map[string]Units, n int, invocations int, billed float64, pr Prices) *Cost {
	if n <= 0 {
		return nil
	}
	c := &Cost{Per: per, ByOperation: units, Lambda: map[int]float64{}, Total: map[int]float64{}}
	for _, u := range units {
		c.WRU += u.Write
		c.RRU += u.Read
	}
	c.WRU /= float64(n)
	c.RRU /= float64(n)
	c.DynamoDB = 1e6 * (c.WRU*pr.WriteRequestUnit + c.RRU*pr.ReadRequestUnit)
	if billed <= 0 {
		return c
	}
	c.BilledMs = billed
	c.Invocations = float64(invocations) / float64(n)
	for _, mb := range pr.MemoryMB {
		perInvocation := pr.LambdaRequest + billed/1000*float64(mb)/1024*pr.LambdaGBSecond
		c.Lambda[mb] = 1e6 * c.Invocations * perInvocation
		c.Total[mb] = c.DynamoDB + c.Lambda[mb]
	}
	return c
}

// writesByOp formats write units per request or event by operation,
// "PutItem 1.00 + TransactWriteItems 6.00".
func writesByOp(c *Cost, n int) string {
	order := []string{"PutItem", "GetItem", "TransactWriteItems", "UpdateItem", "DeleteItem"}
	ops := make([]string, 0, len(c.ByOperation))
	for op, u := range c.ByOperation {
		if u.Write > 0 {
			ops = append(ops, op)
		}
	}
	slices.SortFunc(ops, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.2f", op, c.ByOperation[op].Write/float64(n))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " + ")
}

// unitsString is the progress line's units, ", 7.00 WRU 0.00 RRU per
// request".
func unitsString(c *Cost) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", %.2f WRU %.2f RRU per %s", c.WRU, c.RRU, c.Per)
}

// usd formats dollars per million.
func usd(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("$%.3f", v)
}
