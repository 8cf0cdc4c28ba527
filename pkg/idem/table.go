package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// WithTableKind tells the store its table's kind (idemtable.Regional,
// MREC or MRSC), so it asks nothing: no DescribeTable, no permission for
// it. A store is otherwise told by the table itself (Store.Learn).
// NewStore refuses a kind the store's other options cannot run safely
// on: MREC without WithHomes or WithRegion, WithHomes on any other.
func WithTableKind(kind idemtable.Kind) Option {
	return func(s *Store) { s.tbl.told = &idemtable.Info{Kind: kind} }
}

// Learn returns what the store knows of its table's kind, asking
// DynamoDB once (idemtable.Describe: one DescribeTable, no capacity
// units, the dynamodb:DescribeTable permission) when it was neither told
// (WithTableKind) nor has learned it yet. Every way in learns it on the
// store's first call; call Learn where a process starts (a Lambda
// function's init) to take that call out of the first request, and to
// fail there rather than in every call when the store's options do not
// fit the kind: an error wrapping errors.ErrUnsupported (an MREC table
// without WithHomes or WithRegion, or WithHomes on a table that is not
// MREC), with which every call is refused. Any other error is
// DescribeTable's: the store then runs as on a regional table, and asks
// again on its next call, unless DynamoDB refused the permission (then
// it never asks again: tell it with WithTableKind). Whatever it knows, a
// transaction that a table with multi-Region strong consistency refuses
// teaches it that kind (Kind MRSC).
func (s *Store) Learn(ctx context.Context) (idemtable.Info, error) {
	info, err := s.learn(ctx)
	if err != nil {
		return info, err
	}
	return info, s.fits(info.Kind)
}

// ready learns the table's kind, once per store, and refuses a call the
// store's options cannot make safe on it (fits).
func (s *Store) ready(ctx context.Context) error { return s.fits(s.kind(ctx)) }

// fits refuses what the store's options cannot make safe on a table of
// kind k (unknown: anything goes, as on a regional table). On MREC a
// claim's condition sees only its Region's replica: the store needs
// WithHomes, or WithRegion to claim in each caller's Region knowingly.
// Homes are for MREC only: a regional table has no other replica, and an
// MRSC table's conditions see every Region's writes, so a key is claimed
// once without a home (and the leases would cost calls for nothing).
func (s *Store) fits(k idemtable.Kind) error {
	switch {
	case k == idemtable.MREC && s.homes == nil && s.region == "":
		return fmt.Errorf("idem: table %s is an MREC global table (multi-Region eventual consistency), where a key "+
			"claimed in two Regions within the replication lag runs in both: give the store WithHomes (each key "+
			"claimed in its home Region), or WithRegion to claim in each caller's Region and find double executions "+
			"from the streams (idemglobal.Detector): %w", s.table, errors.ErrUnsupported)
	case s.homes != nil && k == idemtable.Regional:
		return fmt.Errorf("idem: table %s is regional: WithHomes is for an MREC global table: %w", s.table, errors.ErrUnsupported)
	case s.homes != nil && k == idemtable.MRSC:
		return fmt.Errorf("idem: table %s is an MRSC global table, whose conditions see every Region's writes, so a "+
			"key is claimed once without a home: WithHomes is for an MREC global table: %w", s.table, errors.ErrUnsupported)
	}
	return nil
}

// kind is the table's kind for a call made with ctx: known, or learned
// now ("" when that fails).
func (s *Store) kind(ctx context.Context) idemtable.Kind {
	if info := s.tbl.known.Load(); info != nil {
		return info.Kind
	}
	info, _ := s.learn(ctx)
	return info.Kind
}

// strong reports whether the table has multi-Region strong consistency:
// effects commit without a transaction.
func (s *Store) strong(ctx context.Context) bool { return s.kind(ctx) == idemtable.MRSC }

// learn asks DynamoDB for the table's kind, once.
func (s *Store) learn(ctx context.Context) (idemtable.Info, error) {
	st := &s.tbl
	if info := st.known.Load(); info != nil {
		return *info, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if info := st.known.Load(); info != nil {
		return *info, nil
	}
	if st.describe == nil {
		st.known.Store(&idemtable.Info{}) // nothing to ask
		return idemtable.Info{}, nil
	}
	info, err := idemtable.Describe(ctx, st.describe, s.table)
	if err != nil {
		err = fmt.Errorf("idem: learn the table's kind: %w", err)
		if denied(err) {
			st.known.Store(&idemtable.Info{})
		}
		s.tableTrace(ctx, idemtrace.TableLearnedInfo{From: "DescribeTable", Err: err})
		return idemtable.Info{}, err
	}
	st.known.Store(&info)
	s.tableTrace(ctx, learnedInfo(info, "DescribeTable"))
	return info, nil
}

// learnRefusal learns MRSC from err, when it is DynamoDB's refusal of a
// transaction on such a table (the store asked nothing, or could not),
// and reports whether it was.
func (s *Store) learnRefusal(ctx context.Context, err error) bool {
	if !strongRefusal(err) {
		return false
	}
	st := &s.tbl
	st.mu.Lock()
	info := idemtable.Info{Kind: idemtable.MRSC}
	if old := st.known.Load(); old != nil {
		info.Region, info.Replicas, info.Witness = old.Region, old.Replicas, old.Witness
	}
	st.known.Store(&info)
	st.mu.Unlock()
	s.tableTrace(ctx, learnedInfo(info, "refusal"))
	return true
}

// tableTrace reports what was learned to the trace of the call of ctx,
// or the store's.
func (s *Store) tableTrace(ctx context.Context, info idemtrace.TableLearnedInfo) {
	t := traceOf(ctx)
	if t == noTrace {
		t = s.traceFor(ctx)
	}
	event(ctx, t.TableLearned, info)
}
