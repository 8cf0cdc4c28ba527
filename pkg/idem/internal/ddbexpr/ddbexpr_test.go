package ddbexpr_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/ddbexpr"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	names, values, err := ddbexpr.Placeholders("(attribute_not_exists(#c) OR #c <= :lim) AND #c.#d[3] <> :lim AND size(x) > :n")
	must.NoError(t, err)
	check.Equal(t, []string{"#c", "#d"}, names)
	check.Equal(t, []string{":lim", ":n"}, values)
	_, _, err = ddbexpr.Placeholders("#a = :")
	check.ErrorIs(t, err, ddbexpr.ErrSyntax)
	_, _, err = ddbexpr.Placeholders("(#a = :b")
	check.ErrorIs(t, err, ddbexpr.ErrSyntax)
	_, _, err = ddbexpr.Placeholders("#a = :b; drop")
	check.ErrorIs(t, err, ddbexpr.ErrSyntax)
}

func TestAttributes(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][]string{
		"attribute_not_exists(id)":                             {"id"},
		"#a.#b = :v AND begins_with(c.d, :p)":                  {"#a", "c"},
		"size(#l[2]) BETWEEN :x AND :y OR NOT contains(s, :e)": {"#l", "s"},
		":a IN (:b, :c)":                                       nil,
	} {
		got, err := ddbexpr.Attributes(expr)
		must.NoError(t, err, expr)
		check.Equal(t, want, got, expr)
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	got, err := ddbexpr.Actions("ADD #count :n, #c0 :c0 SET #updated = :now, l = list_append(if_not_exists(l, :e), :x) remove old[1].z DELETE tags :t")
	must.NoError(t, err)
	check.Equal(t, []ddbexpr.Action{
		{Clause: "ADD", Target: "#count"}, {Clause: "ADD", Target: "#c0"},
		{Clause: "SET", Target: "#updated"}, {Clause: "SET", Target: "l"},
		{Clause: "REMOVE", Target: "old"}, {Clause: "DELETE", Target: "tags"},
	}, got)
	for _, bad := range []string{"", "#a = :b", "SET", "SET #a = :b SET #c = :d", "SET #a = :b,", "SET , #a = :b", "ADD :v #a", "SET #a = :b REMOVE"} {
		_, err := ddbexpr.Actions(bad)
		check.ErrorIs(t, err, ddbexpr.ErrSyntax, "%q", bad)
	}
}

func TestAddAction(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SET #a = :b":             "SET #a = :b ADD #m :m",
		"ADD #c :n":               "ADD #c :n, #m :m",
		"ADD #c :n SET #u = :now": "ADD #c :n, #m :m SET #u = :now",
		"SET #u = list_append(#u, :l) ADD #c :n  ": "SET #u = list_append(#u, :l) ADD #c :n, #m :m",
		"add #c :n remove #x":                      "add #c :n, #m :m remove #x",
	} {
		got, err := ddbexpr.AddAction(in, "#m :m")
		must.NoError(t, err, in)
		check.Equal(t, want, got, in)
		actions, err := ddbexpr.Actions(got)
		must.NoError(t, err, got)
		check.True(t, slices.Contains(actions, ddbexpr.Action{Clause: "ADD", Target: "#m"}), got)
	}
	_, err := ddbexpr.AddAction("SET", "#m :m")
	check.ErrorIs(t, err, ddbexpr.ErrSyntax)
}

func TestDeleteAction(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SET #a = :b ADD #m :m":      "SET #a = :b ADD #m :m DELETE #p :p",
		"DELETE #s :x ADD #m :m":     "DELETE #s :x, #p :p ADD #m :m",
		"delete #s :x set #u = :now": "delete #s :x, #p :p set #u = :now",
	} {
		got, err := ddbexpr.DeleteAction(in, "#p :p")
		must.NoError(t, err, in)
		check.Equal(t, want, got, in)
		actions, err := ddbexpr.Actions(got)
		must.NoError(t, err, got)
		check.True(t, slices.Contains(actions, ddbexpr.Action{Clause: "DELETE", Target: "#p"}), got)
	}
}

func TestNotExists(t *testing.T) {
	t.Parallel()
	for cond, want := range map[string]string{"attribute_not_exists(#id)": "#id", " attribute_not_exists( pk ) ": "pk"} {
		got, ok := ddbexpr.NotExists(cond)
		check.True(t, ok, cond)
		check.Equal(t, want, got, cond)
	}
	for _, cond := range []string{"attribute_exists(#id)", "attribute_not_exists(#a.#b)", "attribute_not_exists(#a) AND #b = :c", "NOT attribute_exists(#a)"} {
		_, ok := ddbexpr.NotExists(cond)
		check.False(t, ok, cond)
	}
}

// An action added to any update that reads is one more ADD action, and
// every action it had is still there, in its clause.
func FuzzAddAction(f *testing.F) {
	for _, s := range []string{"SET #a = :b", "ADD #c :n SET #u = :now", "REMOVE x, y[2] DELETE s :s", "SET #l = list_append(#l, :x), #m = if_not_exists(#m, :z)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, update string) {
		before, err := ddbexpr.Actions(update)
		if err != nil {
			if !errors.Is(err, ddbexpr.ErrSyntax) {
				t.Fatalf("%q: %v is not ErrSyntax", update, err)
			}
			return
		}
		got, err := ddbexpr.AddAction(update, "#idem_m :idem_m")
		if err != nil {
			t.Fatalf("%q reads but takes no action: %v", update, err)
		}
		after, err := ddbexpr.Actions(got)
		if err != nil {
			t.Fatalf("%q became %q, which does not read: %v", update, got, err)
		}
		want := append(slices.Clone(before), ddbexpr.Action{Clause: "ADD", Target: "#idem_m"})
		slices.SortStableFunc(want, func(a, b ddbexpr.Action) int { return compare(a.Clause, b.Clause) })
		slices.SortStableFunc(after, func(a, b ddbexpr.Action) int { return compare(a.Clause, b.Clause) })
		if !slices.Equal(want, after) {
			t.Fatalf("%q became %q: actions %v, want %v", update, got, after, want)
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
