package idemotel_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// On a table with multi-Region strong consistency, the store's first
// call says what it learned of its table (an event on the call), and a
// commit applies its writes in an idem.intents span, its child.
func TestAnMRSCCommitShowsWhatItLearnedAndItsWritesApplied(t *testing.T) {
	t.Parallel()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-east-2", "us-west-2"}})
	must.NoError(t, err)
	t.Cleanup(g.Close)
	db := g.Region("us-east-1").HandlerClient()
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}))
	_, err = db.CreateTable(ctx, idemtable.Input("products", idemtable.Layout{}))
	must.NoError(t, err)
	spans := tracetest.NewSpanRecorder()
	s, err := idem.NewStore(db, "idempotency", idem.WithTrace(idemotel.NewTrace(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))))
	must.NoError(t, err)
	_, err = s.Execute(ctx, scope(t, "k"), "fp", func(context.Context) (idem.Effect, error) {
		return idem.Effect{Response: idem.Response{Body: []byte("{}")}, Writes: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String("products"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "p"}},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}}}}, nil
	})
	must.NoError(t, err)
	ended := spans.Ended()
	call := one(t, ended, "idem.execute")
	learned := events(call, "idem.table_learned")
	if check.Len(t, learned, 1) {
		check.Equal(t, "MRSC", attr(learned[0].Attributes, idemotel.AttrTableKind))
		check.Equal(t, "DescribeTable", attr(learned[0].Attributes, idemotel.AttrTableFrom))
	}
	commit, intents := one(t, ended, "idem.commit"), one(t, ended, "idem.intents")
	childOf(t, intents, commit)
	check.Equal(t, "UpdateItem", attr(commit.Attributes(), idemotel.AttrCommitRequest))
	check.Equal(t, "1", attr(intents.Attributes(), idemotel.AttrIntentsWrites))
	check.Equal(t, "false", attr(intents.Attributes(), idemotel.AttrIntentsRecovery))
	check.Equal(t, "1", attr(intents.Attributes(), idemotel.AttrIntentsApplied))
	check.Equal(t, "0", attr(intents.Attributes(), idemotel.AttrIntentsAlready))
}
