#!/usr/bin/env bash
# The mutation check behind `make mutants` (issue 26, point 5; issue 36,
# hole 5; issue 37): a fixed list of hand-made mutants of the conditions
# and branches that carry exactly once in pkg/idem, each of which a
# deterministic test must kill. docs/testing.md's table lists them by
# category: claim (every clause of the claim's condition, the claim state
# machine, the lease a claim writes), judgement (what the record that beat
# a claim decides), lost-answer read-back (a write that may have landed),
# fence, release, watchdog, acknowledgement (an effect not recorded is
# acknowledged by every way in), cancellation reasons, batches, scopes,
# operators, call (a call's own settings, reaching that call alone) and
# global (on a table with multi-Region strong consistency the apply-once
# markers, the guards, the sweep's delete and the finish; on MREC a key's
# home and the refusal of a store with no mode).
#
# A mutant is a name, a category, a file, an exact fragment of it and its
# replacement, and the tests that must kill it: each a module directory, a
# package list and a -run pattern, and a kind. `unit` and `fake` targets
# are deterministic (the pkg module's unit tests, and the conformance
# module's tests in fake time, never the suite: every deterministic run
# skips it); `suite` targets are the conformance suite (TestConformance,
# and across Regions TestConformanceAcrossRegions, TestConformanceOnMRSC
# and TestBaselineAcrossRegions, pkg/idem/idemconform), whose randomized
# cells do not count as a kill here. A mutant is applied with `go test -overlay` (a
# mutated copy in a temporary directory stands in for the file), never by
# editing the tree, so an interrupted run leaves nothing behind. Its
# deterministic targets run in order, without -race and with -failfast,
# until one fails: that kills it, and the failing tests are printed with
# their first message.
#
# When no listed deterministic target kills a mutant, the whole
# deterministic set runs (every test of pkg/idem/... in the pkg module,
# the conformance module's fake-time tests, idemotel's), so that a count
# is honest: a mutant a deterministic test kills that the list does not
# name fails the script ("the list is stale"), and so does one only the
# conformance suite kills (its suite targets run last, to say so), one
# nothing kills, a fragment that is not in its file exactly once (a
# refactor must update this list, never silently skip a mutant) and a
# mutant that does not build.
#
# Placeholders stay in use in every mutated expression (a clause is made
# always true or always false rather than dropped): the strict store, as
# DynamoDB does, refuses an expression attribute name or value that no
# expression uses, and a mutant killed by that refusal would prove nothing.
#
# MUTANTS=<regexp> runs only the mutants whose name or category matches
# it; MUTANTS_JOBS=<n> runs n mutants at once (default: the number of
# CPUs, at most 4); MUTANTS_BASELINE=1 first runs every target on the
# unmutated tree (each must pass, or a kill would prove nothing: CI runs
# `make test`, which runs every target, just before); MUTANTS_SURVEY=1
# runs the whole deterministic set against every mutant and prints every
# test that fails (what a new mutant's target should be; slow);
# MUTANTS_SUITE=1 also runs each mutant's suite targets, and says whether
# the conformance suite kills it too. `scripts/mutants.sh -l` lists the
# mutants; `-t` prints docs/testing.md's table of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

names=() cats=() files=() froms=() tos=() whats=() targets=()

# mutant NAME CATEGORY FILE FROM TO: the next mutant; its targets follow.
mutant() {
	names+=("$1") cats+=("$2") files+=("$3") froms+=("$4") tos+=("$5") whats+=("") targets+=("")
}
# what TEXT: what the last mutant changes, in words, for the table.
what() { whats[${#names[@]} - 1]=$1; }
# kill_with KIND DIR PACKAGES PATTERN: a test run that must kill the last
# mutant; KIND is det (deterministic) or suite. unit, fake, otel and
# suite name the usual ones: a pkg module package's unit tests, the
# conformance module's fake-time tests, idemotel's, the conformance
# suite's cells.
kill_with() {
	local i=$((${#names[@]} - 1))
	targets[i]+="$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\n'
}
unit() { kill_with det pkg "$1" "$2"; }
fake() { kill_with det pkg/idem/idemconform . "$1"; }
suite() { kill_with suite pkg/idem/idemconform . "$1"; }
otel() { kill_with det pkg/idem/idemotel . "$1"; }

# The conformance suite's tests, whose randomized cells (in one Region,
# and across the Regions of a global table) every deterministic run skips.
suites='^(TestConformance|TestConformanceAcrossRegions|TestConformanceOnMRSC|TestBaselineAcrossRegions)$'

# The whole deterministic set: what runs when a mutant's own targets
# miss, and for MUTANTS_SURVEY.
everything=(
	"pkg"$'\t'"./idem/..."
	"pkg/idem/idemconform"$'\t'"."
	"pkg/idem/idemotel"$'\t'"."
)

# A fence made always true, every placeholder still in use: no condition
# at all (an UpdateItem then creates a missing record).
unfenced='"(attribute_not_exists(#lt) OR #lt = :mine OR #lt <> :mine) AND (attribute_not_exists(#st) OR #st = :in_progress OR #st <> :in_progress)"'

# --- claim: the claim's condition, its state machine, the lease it writes ---

mutant claim-without-absent-clause claim pkg/idem/claim.go \
	'"attribute_not_exists(#id) OR #exp < :now_s OR "' \
	'"(attribute_exists(#id) AND #exp < :now_s) OR "'
what 'a fresh key can never be claimed (attribute_not_exists always false)'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'
suite '^TestConformance$/^Run$/^none$'

mutant expiry-never claim pkg/idem/claim.go \
	'OR #exp < :now_s OR' \
	'OR (#exp < :now_s AND :now_s < #exp) OR'
what 'an expired record never counts as absent'
fake '^TestRetentionToTheSecond$'

mutant expiry-condition-one-second-early claim pkg/idem/claim.go \
	'OR #exp < :now_s OR' \
	'OR #exp <= :now_s OR'
what 'a record expires in its last second (<= for <)'
fake '^TestRetentionToTheSecond$'

mutant expiry-condition-always claim pkg/idem/claim.go \
	'OR #exp < :now_s OR' \
	'OR (#exp < :now_s OR #exp >= :now_s) OR'
what 'every record counts as expired: a completed key runs again'
fake '^TestRetentionToTheSecond$'

mutant claim-ignores-status claim pkg/idem/claim.go \
	'"(#st = :in_progress AND #lease_exp < :now_ms' \
	'"((#st = :in_progress OR #st <> :in_progress) AND #lease_exp < :now_ms'
what 'a completed record whose lease time has passed is taken over'
fake '^TestRetentionToTheSecond$'

mutant takeover-ignores-lease claim pkg/idem/claim.go \
	'(#st = :in_progress AND #lease_exp < :now_ms AND' \
	'(#st = :in_progress AND (#lease_exp < :now_ms OR #lease_exp >= :now_ms) AND'
what 'a live holder is taken over'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'
fake '^TestLeaseEndsToTheMillisecond$'

mutant takeover-one-ms-early claim pkg/idem/claim.go \
	'AND #lease_exp < :now_ms AND' \
	'AND #lease_exp <= :now_ms AND'
what 'a holder is taken over in the last millisecond of its lease (<= for <)'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'
fake '^TestLeaseEndsToTheMillisecond$'

mutant takeover-ignores-fingerprint claim pkg/idem/claim.go \
	'#lease_exp < :now_ms AND #fp = :fp)' \
	'#lease_exp < :now_ms AND (#fp = :fp OR #fp <> :fp))'
what 'a dead holder'\''s key is taken over by another payload'
fake '^TestTakeoverByAnotherPayloadIsKeyReuse$'

mutant takeover-never claim pkg/idem/claim.go \
	'#lease_exp < :now_ms AND #fp = :fp)' \
	'#lease_exp < :now_ms AND #fp = :fp AND #fp <> :fp)'
what 'a dead holder'\''s key is never taken over'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'

# The claim of a transaction (Transact, ExecuteBatch) alone.
mutant transact-claim-overwrites-live-holder claim pkg/idem/claim.go \
	'ConditionExpression:                 aws.String(claimCondition),' \
	'ConditionExpression:                 aws.String("attribute_not_exists(#id) OR #exp < :now_s OR (#st = :in_progress AND (#lease_exp < :now_ms OR #lease_exp >= :now_ms) AND #fp = :fp)"),'
what 'Transact'\''s and ExecuteBatch'\''s claim alone overwrites a live holder'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'

mutant transact-claim-overwrites-completed claim pkg/idem/claim.go \
	'ConditionExpression:                 aws.String(claimCondition),' \
	'ConditionExpression:                 aws.String("attribute_not_exists(#id) OR #exp < :now_s OR (#st <> :in_progress AND #fp = :fp) OR (#st = :in_progress AND #lease_exp < :now_ms AND #fp = :fp)"),'
what 'Transact'\''s and ExecuteBatch'\''s claim alone overwrites a completed record'
unit ./idem '^TestATransactionLandedOnlyIfTheRecordIsItsOwn$'

# decide, the claim state machine.
mutant held-record-never-read claim pkg/idem/claim.go \
	'if !c.follows && c.sentOnce && !m.read {' \
	'if !c.follows && !m.read {'
what 'a claim that may have landed, then met a running transaction, answers in flight without reading its record'
unit ./idem '^TestAClaimThatMayHaveLandedAndCannotBeReadIsReleased$'

mutant held-record-never-followed claim pkg/idem/claim.go \
	'if !c.follows && c.sentOnce && !m.read {' \
	'if c.sentOnce && !m.read {'
what 'a following claim (a wait, a queue) that meets a running transaction answers in flight at once'
unit ./idem '^TestAFollowedRecordThatHasExpiredRunsAgain$'

mutant gone-record-in-flight claim pkg/idem/claim.go \
	$'\tif !m.found {\n\t\treturn stepAgain, nil\n' \
	$'\tif !m.found {\n\t\treturn stepRefuse, busy()\n'
what 'a claim whose record vanished answers in flight instead of claiming again'
unit ./idem '^TestAWaiterWhoseHolderReleasesTheKeyClaimsIt$'
unit ./idem '^TestAClaimWhoseRecordVanishedBeforeItWasReadClaimsAgain$'

mutant own-record-claimed-again claim pkg/idem/claim.go \
	$'\tcase verdictOwn:\n\t\treturn stepOwn, nil\n' \
	$'\tcase verdictOwn:\n\t\treturn stepAgain, nil\n'
what 'a claim that meets its own landed write claims again (and ends in flight)'
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant key-reuse-in-flight claim pkg/idem/claim.go \
	'return stepRefuse, ErrKeyReuse' \
	'return stepRefuse, &InFlightError{RetryAfter: time.Second}'
what 'another payload answers in flight instead of key reuse'
fake '^TestTakeoverByAnotherPayloadIsKeyReuse$'

mutant replay-claimed-again claim pkg/idem/claim.go \
	$'\tcase verdictReplay:\n\t\treturn stepReplay, nil\n' \
	$'\tcase verdictReplay:\n\t\treturn stepAgain, nil\n'
what 'a completed record of the same payload is claimed again instead of replayed'
fake '^TestRetentionToTheSecond$'

mutant live-holder-never-awaited claim pkg/idem/claim.go \
	$'\t\tif c.waits {\n' \
	$'\t\tif false && c.waits {\n'
what 'a call with a wait answers in flight at once'
unit ./idem '^TestAWaitRunsOutToTheMillisecondWhileItsHolderLives$'

mutant live-holder-always-awaited claim pkg/idem/claim.go \
	$'\t\tif c.waits {\n' \
	$'\t\tif true || c.waits {\n'
what 'a call without a wait waits for the live holder'
unit ./idem '^TestAWaitRunsOutToTheMillisecondWhileItsHolderLives$'

mutant retry-after-one-ms-early claim pkg/idem/claim.go \
	'return max(rec.LeaseExpiresAt.Sub(now)+time.Millisecond, time.Millisecond)' \
	'return max(rec.LeaseExpiresAt.Sub(now), time.Millisecond)'
what 'Retry-After ends on the last millisecond of the lease, not one past it'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'

mutant absent-record-in-flight claim pkg/idem/claim.go \
	$'\t}\n\treturn stepAgain, nil\n}\n' \
	$'\t}\n\treturn stepRefuse, busy()\n}\n'
what 'a claim that reads an expired record or a dead holder'\''s answers in flight instead of claiming again'
unit ./idem '^TestAFollowedRecordThatHasExpiredRunsAgain$'

mutant claim-attempts-one-too-many claim pkg/idem/claim.go \
	'if c.again++; c.again >= c.s.maxAttempts {' \
	'if c.again++; c.again > c.s.maxAttempts {'
what 'a claim whose key keeps changing hands makes one attempt more than the store allows'
unit ./idem '^TestAClaimThatCannotSettleMakesItsAttemptsThenIsInFlight$'

mutant claim-conflict-is-an-error claim pkg/idem/reserve.go \
	$'\t\t\ta.met = met{held: true}\n' \
	$'\t\t\treturn a.claim, err\n'
what 'a claim that meets a running transaction fails with the store'\''s error (unavailable) instead of deciding'
unit ./idem '^TestAClaimThatCannotSettleMakesItsAttemptsThenIsInFlight$'

mutant follow-reads-at-once claim pkg/idem/reserve.go \
	$'\tif c.follows {\n' \
	$'\tif false && c.follows {\n'
what 'a following claim reads the record at once, before the running transaction is done'
unit ./idem '^TestMidCommitDuplicateWithAWaitReadsOnce$'

mutant takeover-reported-executed claim pkg/idem/reserve.go \
	'a.claim = s.leased(c, c.id, now, a.leaseEnd, s.wasHeldByAnother(out.Attributes, c.token))' \
	'a.claim = s.leased(c, c.id, now, a.leaseEnd, false && s.wasHeldByAnother(out.Attributes, c.token))'
what 'a takeover of a dead holder'\''s key is reported executed'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'

mutant expired-claim-reported-takeover claim pkg/idem/reserve.go \
	'if !ok || st.Value != statusInProgress {' \
	'if !ok || st.Value == "" {'
what 'a claim of an expired completed record is reported a takeover'
fake '^TestRetentionToTheSecond$'

# The lease a claim writes.
mutant lease-ignores-deadline claim pkg/idem/lease.go \
	$'if dl, ok := ctx.Deadline(); ok {\n\t\tend = dl' \
	$'if dl, ok := ctx.Deadline(); ok && false {\n\t\tend = dl'
what 'the lease of a call with a deadline ignores it (a lease from now instead)'
fake '^TestLeaseEndsToTheMillisecond$'

mutant lease-without-margin claim pkg/idem/lease.go \
	'return end.Add(s.margin)' \
	'return end'
what 'the lease ends without the margin'
fake '^TestLeaseEndsToTheMillisecond$'

mutant record-expires-under-its-holder claim pkg/idem/lease.go \
	'return now.Add(max(retention, leaseEnd.Sub(now)))' \
	'return now.Add(retention)'
what 'a held record'\''s expiry is the retention even when the lease is longer'
unit ./idem '^TestAHeldRecordDoesNotExpireUnderItsHolder$'

# The wait for a live holder.
mutant wait-past-the-deadline claim pkg/idem/wait.go \
	'if dl, ok := ctx.Deadline(); ok && dl.Add(-waitAnswerTime).Before(w.end) {' \
	'if dl, ok := ctx.Deadline(); false && ok && dl.Add(-waitAnswerTime).Before(w.end) {'
what 'a wait ignores the context'\''s deadline'
fake '^TestWaitStopsBeforeTheDeadline$'

mutant wait-twice-its-max claim pkg/idem/wait.go \
	'left := time.Until(w.end)' \
	'left := time.Until(w.end.Add(w.max))'
what 'a wait lasts twice its maximum'
unit ./idem '^TestAWaitRunsOutToTheMillisecondWhileItsHolderLives$'

# --- judgement: what the record that beat a claim decides -----------------

mutant expiry-judged-one-second-early judgement pkg/idem/internal/record/record.go \
	'return r.ExpiresAt.Unix() < now.Unix()' \
	'return r.ExpiresAt.Unix() <= now.Unix()'
what 'judge reads a record as expired in its last second'
fake '^TestRetentionToTheSecond$'

mutant judge-ignores-expiry judgement pkg/idem/claim.go \
	'case rec.Expired(now):' \
	'case false && rec.Expired(now):'
what 'judge reads an expired record as live'
unit ./idem '^TestAFollowedRecordThatHasExpiredRunsAgain$'

mutant judge-ignores-own-token judgement pkg/idem/claim.go \
	'case rec.LeaseToken == token:' \
	'case false && rec.LeaseToken == token:'
what 'judge does not recognise the call'\''s own token'
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant judge-ignores-payload judgement pkg/idem/claim.go \
	'case rec.Fingerprint != fingerprint:' \
	'case false && rec.Fingerprint != fingerprint:'
what 'judge does not tell another payload apart (it replays another payload'\''s response)'
fake '^TestTakeoverByAnotherPayloadIsKeyReuse$'

mutant judge-ignores-completion judgement pkg/idem/claim.go \
	$'\tcase rec.Status == statusCompleted:\n\t\treturn verdictReplay\n' \
	$'\tcase false && rec.Status == statusCompleted:\n\t\treturn verdictReplay\n'
what 'judge does not read a completed record as a replay'
fake '^TestRetentionToTheSecond$'

mutant judge-lease-one-ms-short judgement pkg/idem/claim.go \
	'case rec.LeaseExpiresAt.UnixMilli() >= now.UnixMilli():' \
	'case rec.LeaseExpiresAt.UnixMilli() > now.UnixMilli():'
what 'judge reads a holder as dead in its lease'\''s last millisecond'
unit ./idem '^TestALeasesLastMillisecondIsTheHolders$'

mutant judge-dead-holder-in-flight judgement pkg/idem/claim.go \
	'return verdictAbsent // the lease ended since the write: take over' \
	'return verdictInFlight // the lease ended since the write: take over'
what 'judge reads a dead holder as in flight'
unit ./idem '^TestAWaiterAnswersInFlightWhenItsHolderDies$'

mutant in-flight-outcome-error judgement pkg/idem/errors.go \
	$'\tcase errors.Is(err, ErrInFlight):\n\t\treturn OutcomeInFlight\n' \
	$'\tcase errors.Is(err, ErrInFlight):\n\t\treturn OutcomeError\n'
what 'an in-flight answer is reported error'
unit ./idem '^TestAWaitRunsOutToTheMillisecondWhileItsHolderLives$'

mutant key-reuse-outcome-error judgement pkg/idem/errors.go \
	$'\tcase errors.Is(err, ErrKeyReuse):\n\t\treturn OutcomeKeyReuse\n' \
	$'\tcase errors.Is(err, ErrKeyReuse):\n\t\treturn OutcomeError\n'
what 'key reuse is reported error'
fake '^TestTakeoverByAnotherPayloadIsKeyReuse$'

mutant waiter-takes-over-a-dead-holder judgement pkg/idem/wait.go \
	'case v == verdictAbsent && !rec.Expired(now):' \
	'case false && v == verdictAbsent && !rec.Expired(now):'
what 'a waiter whose holder died claims the key itself'
unit ./idem '^TestAWaiterAnswersInFlightWhenItsHolderDies$'

mutant waiter-gives-up-a-released-key judgement pkg/idem/wait.go \
	'return met{at: now}, nil // released: the key is free' \
	'return met{}, &InFlightError{RetryAfter: retryAfter}'
what 'a waiter whose holder released the key answers in flight instead of claiming it'
unit ./idem '^TestAWaiterWhoseHolderReleasesTheKeyClaimsIt$'

mutant held-claim-retried-not-decided judgement pkg/idem/transact.go \
	'if held && !c.follows {' \
	'if false && held && !c.follows {'
what 'Transact retries a claim that met its record held, instead of deciding at once'
unit ./idem '^TestATransactionWhoseRecordStaysHeldIsInFlight$'

mutant contended-record-unavailable judgement pkg/idem/transact.go \
	$'\tif contended {\n\t\treturn Result{Outcome: OutcomeInFlight}, busy()\n\t}\n\treturn Result{Outcome: failed(err, true, true)}, err\n}' \
	$'\treturn Result{Outcome: failed(err, true, true)}, err\n}'
what 'Transact'\''s claim whose record stayed contended answers 503 instead of in flight'
unit ./idem '^TestATransactionWhoseRecordStaysHeldIsInFlight$'

# The cache's answer: a replay or key reuse without a call.
mutant transaction-never-awaits-a-live-holder judgement pkg/idem/transact.go \
	$'\tst, err := c.decide(m)\n\tif st == stepAwait {\n\t\t// A live' \
	$'\tst, err := c.decide(m)\n\tif false && st == stepAwait {\n\t\t// A live'
what 'Transact with a wait whose claim failed on a live holder does not wait for it'
unit ./idem '^TestATransactionWithAWaitAwaitsALiveHolder$'

mutant transaction-never-awaits-a-committing-holder judgement pkg/idem/transact.go \
	$'\tst, err := c.decide(m)\n\tif st == stepAwait {\n\t\tif m, err' \
	$'\tst, err := c.decide(m)\n\tif false && st == stepAwait {\n\t\tif m, err'
what 'Transact with a wait whose transaction met a live holder committing does not wait for it'
unit ./idem '^TestATransactionWithAWaitAwaitsALiveHolder$'

mutant cache-ignores-payload judgement pkg/idem/cache.go \
	'case e.fingerprint != fingerprint:' \
	'case false && e.fingerprint != fingerprint:'
what "the cache replays a completed key's response to another payload"
unit ./idem '^TestCachedReplayMakesNoCall$'

mutant cache-serves-past-expiry judgement pkg/idem/cache.go \
	'if !now.Before(e.expiresAt) {' \
	'if now.After(e.expiresAt.Add(time.Second)) {'
what 'the cache replays a record for a second past its expiry'
fake '^TestRetentionToTheSecond$'

# --- lost-answer read-back: a write that may have landed -------------------

mutant sent-once-assumed lost-answer pkg/idem/reserve.go \
	'c.sentOnce = a.sentOnce' \
	'c.sentOnce = true'
what 'a claim the SDK sent twice is taken as sent once'
unit ./idem '^TestAClaimThatMayHaveLandedAndCannotBeReadIsReleased$'

mutant failed-claim-left-held lost-answer pkg/idem/reserve.go \
	$'\t\tlost := &hold{store: s, id: c.id, token: c.token}\n\t\t_ = lost.free(ctx)\n' \
	$'\t\t_ = &hold{store: s, id: c.id, token: c.token}\n'
what 'a claim that failed after the SDK retried it is not released (it may have landed)'
unit ./idem '^TestClaimFailingAfterItsWriteLandedReleasesIt$'

mutant unread-claim-left-held lost-answer pkg/idem/reserve.go \
	$'\t\tif !c.sentOnce {\n\t\t\t_ = (&hold{' \
	$'\t\tif false && !c.sentOnce {\n\t\t\t_ = (&hold{'
what 'a claim that may have landed and whose record could not be read is not released'
unit ./idem '^TestAClaimThatMayHaveLandedAndCannotBeReadIsReleased$'

mutant commit-landed-ignored lost-answer pkg/idem/commit.go \
	'if (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrConditionFailed)) && l.landed(ctx, err, cid) {' \
	'if false && (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrConditionFailed)) && l.landed(ctx, err, cid) {'
what 'a commit retried by the SDK that met its own landed completion fails'
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant completed-by-anyone lost-answer pkg/idem/commit.go \
	'return r.Err() == nil && st == statusCompleted && id == cid' \
	'return r.Err() == nil && st == statusCompleted && (id == cid || id != cid)'
what 'a completion by another holder is taken as this call'\''s own'
unit ./idem '^TestZombieHolderCannotCommitAfterTakeover$'

mutant completion-landed-ignored lost-answer pkg/idem/commit.go \
	'if l.store.completedBy(ccf.Item, cid) {' \
	'if false && l.store.completedBy(ccf.Item, cid) {'
what 'Run'\''s completion retried by the SDK that met its own landed write fails'
unit ./idem '^TestDoWhoseCompletionAnswerWasLostReportsSuccess$'

mutant completion-id-not-its-own lost-answer pkg/idem/commit.go \
	'values[":cid"] = str(completionID)' \
	'values[":cid"] = str(l.store.newToken())'
what 'the completion writes an id the call does not know'
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant release-landed-ignored lost-answer pkg/idem/release.go \
	'if cid != "" && l.store.completedBy(l.found(ctx, ccf.Item), cid) {' \
	'if false && cid != "" && l.store.completedBy(l.found(ctx, ccf.Item), cid) {'
what 'a release that finds the call'\''s own lost commit landed reports failure'
unit ./idem '^TestCommitWhoseEveryAnswerWasLostStillSucceeds$'

mutant execute-ignores-landed-release lost-answer pkg/idem/held.go \
	$'\t\tif !landed {\n' \
	$'\t\tif true || !landed {\n'
what 'Execute answers a failure although its release found the commit landed'
unit ./idem '^TestCommitWhoseEveryAnswerWasLostStillSucceeds$'

mutant transaction-landed-ignored lost-answer pkg/idem/transact.go \
	'if s.landed(ctx, c.id, c.token) {' \
	'if false && s.landed(ctx, c.id, c.token) {'
what 'Transact answers a failure although its transaction landed'
unit ./idem '^TestCommitWhoseEveryAnswerWasLostStillSucceeds$'

mutant transaction-landed-by-anyone lost-answer pkg/idem/transact.go \
	'return err == nil && found && rec.Status == statusCompleted && rec.LeaseToken == token' \
	'return err == nil && found && rec.Status == statusCompleted && (rec.LeaseToken == token || rec.LeaseToken != token)'
what 'Transact takes another call'\''s completed record as its own landed transaction'
unit ./idem '^TestATransactionLandedOnlyIfTheRecordIsItsOwn$'

mutant transact-record-without-its-token lost-answer pkg/idem/claim.go \
	's.attr.LeaseToken:   str(c.token),' \
	's.attr.LeaseToken:   str(s.newToken()),'
what 'a transaction'\''s completed record does not carry the call'\''s token'
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant transact-held-claim-not-read lost-answer pkg/idem/transact.go \
	'if st == stepRead {' \
	'if false && st == stepRead {'
what 'Transact answers a held record without reading it when an attempt the SDK sent twice may have landed (executed, with no response)'
unit ./idem '^TestATransactionSentTwiceThenHeldReadsItsRecord$'

mutant settle-ignores-the-record lost-answer pkg/idem/transact.go \
	$'\tif found {\n\t\tc.waits = false\n' \
	$'\tif false && found {\n\t\tc.waits = false\n'
what 'Transact settles a call whose attempts are spent without the record it read'
unit ./idem '^TestTransactWhoseEarlierAttemptLandedIsNotInFlight$'

mutant transact-forgets-a-double-send lost-answer pkg/idem/transact.go \
	'c.sentOnce = c.sentOnce && sent.once()' \
	'c.sentOnce = sent.once()'
what 'Transact forgets that an earlier transaction of the call was sent twice (it may have landed)'
unit ./idem '^TestTransactWhoseEarlierAttemptLandedIsNotInFlight$'

mutant batch-landed-ignored lost-answer pkg/idem/batch.go \
	'if c := b.claims[pending[0]]; b.s.landed(ctx, c.id, c.token) {' \
	'if c := b.claims[pending[0]]; false && b.s.landed(ctx, c.id, c.token) {'
what 'ExecuteBatch answers a failure although its transaction landed'
unit ./idem '^TestABatchWhoseEveryAnswerWasLostExecuted$'

# --- fence: every write a holder makes --------------------------------------

mutant fence-ignores-token fence pkg/idem/lease.go \
	'const fence = "#lt = :mine AND #st = :in_progress"' \
	'const fence = "(#lt = :mine OR #lt <> :mine) AND #st = :in_progress"'
what 'every holder write lands on another holder'\''s record'
fake '^TestTakeoverFencesTheOldHolder$'

mutant fence-ignores-status fence pkg/idem/lease.go \
	'const fence = "#lt = :mine AND #st = :in_progress"' \
	'const fence = "#lt = :mine AND (#st = :in_progress OR #st <> :in_progress)"'
what 'every holder write lands on a completed record'
unit ./idem '^TestALeaseCompletesOnce$'

mutant renewal-unfenced fence pkg/idem/lease.go \
	'ConditionExpression:       aws.String(fence),' \
	"ConditionExpression:       aws.String($unfenced),"
what 'a renewal is unconditional (it lands on another holder'\''s record)'
fake '^TestHolderStopsAtTheRenewalThatFindsItsKeyTaken$'

mutant renewal-ignores-token fence pkg/idem/lease.go \
	'ConditionExpression:       aws.String(fence),' \
	'ConditionExpression:       aws.String("(#lt = :mine OR #lt <> :mine) AND #st = :in_progress"),'
what "a renewal lands on another holder's record"
fake '^TestHolderStopsAtTheRenewalThatFindsItsKeyTaken$'

mutant renewal-refusal-not-lease-lost fence pkg/idem/lease.go \
	'return fmt.Errorf("%w: renewal refused: %w", ErrLeaseLost, err)' \
	'return fmt.Errorf("idem: renewal refused: %w", err)'
what 'a refused renewal is read as a transient failure, not a lost lease'
fake '^TestHolderStopsAtTheRenewalThatFindsItsKeyTaken$'

mutant completion-unfenced fence pkg/idem/commit.go \
	'ConditionExpression:       aws.String(fence),' \
	"ConditionExpression:       aws.String($unfenced),"
what 'a commit'\''s completion is unconditional'
unit ./idem '^TestAZombieCompletionIsFencedOutOfALiveTakeover$'

mutant completion-ignores-token fence pkg/idem/commit.go \
	'ConditionExpression:       aws.String(fence),' \
	'ConditionExpression:       aws.String("(#lt = :mine OR #lt <> :mine) AND #st = :in_progress"),'
what "a completion (the commit's, Run's) lands on another holder's record"
unit ./idem '^TestAZombieCompletionIsFencedOutOfALiveTakeover$'

mutant completion-ignores-status fence pkg/idem/commit.go \
	'ConditionExpression:       aws.String(fence),' \
	'ConditionExpression:       aws.String("#lt = :mine AND (#st = :in_progress OR #st <> :in_progress)"),'
what 'a completion (the commit'\''s, Run'\''s) lands on a completed record: a lease completes twice'
unit ./idem '^TestALeaseCompletesOnce$'

mutant run-completion-unfenced fence pkg/idem/commit.go \
	'ConditionExpression: u.ConditionExpression,' \
	"ConditionExpression: aws.String($unfenced),"
what 'Run'\''s completion is unconditional'
unit ./idem '^TestDoReportsAnEffectWhoseCompletionWasLost$'

mutant commit-conflict-not-retried fence pkg/idem/commit.go \
	'if !retryableTx(err) || attempt >= l.store.maxTxAttempts {' \
	'if true || !retryableTx(err) || attempt >= l.store.maxTxAttempts {'
what 'a commit cancelled by a conflict is not retried'
unit ./idem '^TestTransactionConflictIsRetriedThenReportedAsUnavailable$'

# --- release -----------------------------------------------------------------

mutant release-unfenced release pkg/idem/release.go \
	$'\t\t\tConditionExpression:                 aws.String(fence),\n\t\t\tExpressionAttributeNames:            l.fenceNames(),\n\t\t\tExpressionAttributeValues:           l.fenceValues(),\n' \
	''
what 'a release deletes whatever record is there'
unit ./idem '^TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord$'

mutant release-deletes-completed release pkg/idem/release.go \
	'ConditionExpression:                 aws.String(fence),' \
	'ConditionExpression:                 aws.String("#lt = :mine AND (#st = :in_progress OR #st <> :in_progress)"),'
what 'a release deletes a completed record'
unit ./idem '^TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord$'

mutant release-ignores-token release pkg/idem/release.go \
	'ConditionExpression:                 aws.String(fence),' \
	'ConditionExpression:                 aws.String("(#lt = :mine OR #lt <> :mine) AND #st = :in_progress"),'
what 'a release deletes another holder'\''s record'
unit ./idem '^TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord$'

mutant lease-lost-reported-released release pkg/idem/release.go \
	'return Result{Outcome: OutcomeLeaseLost}, cause' \
	'return Result{Outcome: OutcomeReleased}, cause'
what 'a failure after a takeover is reported released, not lease lost'
unit ./idem '^TestFailureAfterATakeoverIsLeaseLost$'

mutant fenced-commit-reported-released release pkg/idem/held.go \
	'return Result{Outcome: OutcomeLeaseLost}, err // not ours to release' \
	'return Result{Outcome: OutcomeReleased}, err // not ours to release'
what 'a commit fenced out is reported released, not lease lost'
unit ./idem '^TestZombieHolderCannotCommitAfterTakeover$'

mutant failed-release-reported-free release pkg/idem/release.go \
	'return Result{Outcome: failed(err, store, false)}, err' \
	'return Result{Outcome: failed(err, store, true)}, err'
what 'a failure whose release failed is reported released'
unit ./idem '^TestAFailureWhoseReleaseFailedIsNotReleased$'

mutant operation-error-read-as-unavailable release pkg/idem/release.go \
	'case store && IsUnavailable(err):' \
	'case IsUnavailable(err):'
what 'an operation'\''s own error that looks unavailable is reported unavailable, not released'
unit ./idem '^TestAnOperationsOwnTimeoutIsReleasedNotUnavailable$'

mutant failed-execute-not-released release pkg/idem/held.go \
	'return s.abandon(ctx, lease, err, false)' \
	'return Result{Outcome: OutcomeReleased}, err'
what 'Execute'\''s failed operation leaves its key held'
unit ./idem '^TestFailedOperationOnACancelledContextFreesTheKey$'

mutant failed-run-not-released release pkg/idem/run.go \
	'return s.abandon(ctx, claim.Lease, err, false)' \
	'return Result{Outcome: OutcomeReleased}, err'
what 'Run'\''s failed operation leaves its key held'
unit ./idem '^TestAnOperationsOwnTimeoutIsReleasedNotUnavailable$'

mutant panic-not-released release pkg/idem/held.go \
	$'\t\t\t_ = l.free(ctx)\n\t\t\tpanic(p)\n' \
	$'\t\t\tpanic(p)\n'
what 'Execute'\''s panicking operation leaves its key held'
unit ./idem '^TestPanickingOperationReleasesTheKey$'

# --- watchdog: the heartbeat's cancellation at lease end less the margin ---

mutant heartbeat-without-watchdog watchdog pkg/idem/lease.go \
	'watchdog := time.AfterFunc(left(), func() { lost(ended(nil)) })' \
	'watchdog := time.AfterFunc(left(), func() {})'
what 'the watchdog never cancels the operation'
fake '^TestHolderStopsWhenItsLeaseCannotBeRenewed$'

mutant watchdog-at-lease-end watchdog pkg/idem/lease.go \
	'until := l.expiresAt.Add(-l.store.margin)' \
	'until := l.expiresAt'
what 'the watchdog fires at the lease end, not the margin before'
fake '^TestHolderStopsAtItsRenewedLeasesEnd$'

mutant watchdog-not-rearmed watchdog pkg/idem/lease.go \
	$'\t\t\twatchdog.Reset(left())\n' \
	''
what 'the watchdog is not armed again after a renewal'
fake '^TestHolderStopsAtItsRenewedLeasesEnd$'

mutant heartbeat-ignores-lost-lease watchdog pkg/idem/lease.go \
	$'\t\tcase errors.Is(err, ErrLeaseLost):\n\t\t\tlost(err)\n' \
	$'\t\tcase errors.Is(err, ErrLeaseLost):\n'
what 'a renewal refused (lease lost) does not cancel the operation'
fake '^TestHolderStopsAtTheRenewalThatFindsItsKeyTaken$'

mutant heartbeat-every-half-lease watchdog pkg/idem/lease.go \
	'every := l.store.lease / 3' \
	'every := l.store.lease / 2'
what 'the heartbeat renews every half lease instead of every third'
fake '^TestHeartbeatRenewsEveryThirdOfTheLease$'

mutant heartbeat-never watchdog pkg/idem/lease.go \
	'if deadline && r == nil {' \
	'if (deadline || true) && r == nil {'
what 'a holder without a deadline is never renewed'
fake '^TestHeartbeatRenewsEveryThirdOfTheLease$'

mutant renewal-without-margin watchdog pkg/idem/lease.go \
	'end := now.Add(s.lease + s.margin)' \
	'end := now.Add(s.lease)'
what 'a renewal extends the lease without the margin'
fake '^TestHeartbeatRenewsEveryThirdOfTheLease$'

mutant renewal-not-remembered watchdog pkg/idem/lease.go \
	$'\tl.expiresAt = end\n' \
	$'\t_ = end\n'
what 'a renewal that landed is not remembered: the watchdog keeps the first lease'\''s end'
fake '^TestHeartbeatRenewsEveryThirdOfTheLease$'

mutant completion-retried-into-the-deadline watchdog pkg/idem/lease.go \
	'if deadline, ok := ctx.Deadline(); ok && deadline.Add(-l.store.margin).Before(until) {' \
	'if deadline, ok := ctx.Deadline(); false && ok && deadline.Add(-l.store.margin).Before(until) {'
what 'Run'\''s completion is retried past the deadline less the margin'
fake '^TestRunAnswersBeforeItsDeadlineWhenItsCompletionIsRefused$'

mutant completion-not-retried watchdog pkg/idem/commit.go \
	$'\t\ttime.Sleep(pause)\n' \
	$'\t\treturn expires, err\n'
what 'Run'\''s throttled completion is not retried'
unit ./idem '^TestRunRecordsAnEffectWhoseFirstCompletionWasThrottled$'
suite '^TestConformance$/^Run$/^completion-throttled$'

# --- acknowledgement: an effect not recorded is acknowledged ---------------

mutant run-not-recorded-released acknowledgement pkg/idem/run.go \
	$'\tif errors.Is(err, ErrNotRecorded) {\n\t\treturn Result{Response: resp, Outcome: OutcomeNotRecorded}, err\n' \
	$'\tif false && errors.Is(err, ErrNotRecorded) {\n\t\treturn Result{Response: resp, Outcome: OutcomeNotRecorded}, err\n'
what 'an effect that says ErrNotRecorded has its key released'
unit ./idem '^TestAnEffectThatSaysItWasNotRecordedKeepsItsKey$'

mutant run-not-recorded-unsaid acknowledgement pkg/idem/run.go \
	'fmt.Errorf("%w: %w", ErrNotRecorded, err)' \
	'fmt.Errorf("idem: not recorded: %w", err)'
what 'a completion not recorded does not wrap ErrNotRecorded'
unit ./idem '^TestDoReportsAnEffectWhoseCompletionWasLost$'

mutant run-not-recorded-outcome-error acknowledgement pkg/idem/run.go \
	'return Result{Response: resp, Outcome: OutcomeNotRecorded}, fmt.Errorf("%w: %w", ErrNotRecorded, err)' \
	'return Result{Response: resp, Outcome: OutcomeError}, fmt.Errorf("%w: %w", ErrNotRecorded, err)'
what 'a completion not recorded is reported error (the batch ways redeliver by the outcome)'
unit ./idem/idemstream '^TestAShardAcknowledgesAnEffectNotRecordedAndGoesOn$'

mutant do-loses-the-unrecorded-value acknowledgement pkg/idem/do.go \
	$'\t\tif errors.Is(err, ErrNotRecorded) {\n\t\t\t*v = out' \
	$'\t\tif false && errors.Is(err, ErrNotRecorded) {\n\t\t\t*v = out'
what 'Do returns the zero value for an effect not recorded'
unit ./idem '^TestAnEffectThatSaysItWasNotRecordedKeepsItsKey$'

mutant idemsqs-redelivers-not-recorded acknowledgement pkg/idem/internal/batchway/batchway.go \
	'return r.Err != nil && r.Outcome != idem.OutcomeNotRecorded' \
	'return r.Err != nil'
what 'the batch ways redeliver an effect not recorded'
unit ./idem/idemsqs '^TestRunAcknowledgesAnEffectWhoseCompletionWasNotRecorded$'
suite '^TestConformance$/^idemsqs.Run$/^completion-refused$'

mutant batch-ways-acknowledge-failures acknowledgement pkg/idem/internal/batchway/batchway.go \
	'return r.Err != nil && r.Outcome != idem.OutcomeNotRecorded' \
	'return r.Err != nil && r.Outcome == idem.OutcomeInFlight'
what 'the batch ways acknowledge a failed record (only in-flight ones are redelivered)'
unit ./idem/idemsqs '^TestRunReportsOnlyWhatFailed$'

mutant stream-stops-at-not-recorded acknowledgement pkg/idem/internal/batchway/batchway.go \
	'case b.InOrder && r.Redeliver():' \
	'case b.InOrder && r.Err != nil:'
what 'an in-order batch stops at an effect not recorded'
unit ./idem/idemstream '^TestAShardAcknowledgesAnEffectNotRecordedAndGoesOn$'

mutant idemsqs-response-redelivers-not-recorded acknowledgement pkg/idem/idemsqs/sqs.go \
	'func (r Result) Redeliver() bool { return batchway.Result{Outcome: r.Outcome, Err: r.Err}.Redeliver() }' \
	'func (r Result) Redeliver() bool { return r.Err != nil }'
what 'idemsqs'\''s Result.Redeliver asks again for an effect not recorded'
unit ./idem/idemsqs '^TestRunAcknowledgesAnEffectWhoseCompletionWasNotRecorded$'

mutant idemsqs-batch-item-failure-for-not-recorded acknowledgement pkg/idem/idemsqs/sqs.go \
	$'\t\tif r.Redeliver() {\n' \
	$'\t\tif r.Err != nil {\n'
what "idemsqs's answer to the runtime lists an effect not recorded as a batch item failure"
unit ./idem/idemsqs '^TestRunAcknowledgesAnEffectWhoseCompletionWasNotRecorded$'

mutant idemstream-redelivers-not-recorded acknowledgement pkg/idem/idemstream/stream.go \
	'func (r Result) Redeliver() bool { return batchway.Result{Outcome: r.Outcome, Err: r.Err}.Redeliver() }' \
	'func (r Result) Redeliver() bool { return r.Err != nil }'
what 'idemstream'\''s Result.Redeliver asks again for an effect not recorded'
unit ./idem/idemstream '^TestAShardAcknowledgesAnEffectNotRecordedAndGoesOn$'

mutant idemstream-checkpoint-at-not-recorded acknowledgement pkg/idem/idemstream/stream.go \
	$'\t\tif r.Redeliver() {\n' \
	$'\t\tif r.Err != nil {\n'
what "idemstream's answer to the runtime names an effect not recorded as the shard's failure"
unit ./idem/idemstream '^TestAShardAcknowledgesAnEffectNotRecordedAndGoesOn$'

mutant idemevent-fails-not-recorded acknowledgement pkg/idem/idemevent/idemevent.go \
	$'\t\t\treturn out, nil\n' \
	$'\t\t\treturn out, err\n'
what 'idemevent returns an error for an effect not recorded'
unit ./idem/idemevent '^TestAnEffectWhoseCompletionWasNotRecordedIsNotRetried$'
suite '^TestConformance$/^idemevent$/^completion-refused$'

mutant idemhttp-problem-for-not-recorded acknowledgement pkg/idem/idemhttp/lambda.go \
	'return ev.to(req, replayOf(res.Response), false), nil // the effect happened: say so' \
	'return ev.to(req, m.problemFor(err).response(), false), nil'
what 'idemhttp'\''s Lambda paths answer a problem for an effect not recorded'
unit ./idem/idemhttp '^TestAnEffectNotRecordedAnswersTheHandlersResponse$'
suite '^TestConformance$/^idemhttp.APIGatewayV2$/^completion-refused$'

mutant idemhttp-handler-problem-for-not-recorded acknowledgement pkg/idem/idemhttp/middleware.go \
	'write(w, replayOf(res.Response), false) // the effect happened: say so' \
	'm.problemFor(err).Write(w)'
what 'idemhttp'\''s net/http path answers a problem for an effect not recorded'
unit ./idem/idemhttp '^TestAnEffectNotRecordedAnswersTheHandlersResponse$'

# --- cancellation reasons: explainTx -----------------------------------------

mutant throttling-read-as-refused reasons pkg/idem/retry.go \
	'case "ThrottlingError", "ProvisionedThroughputExceeded":' \
	'case "ProvisionedThroughputExceeded":'
what 'ThrottlingError read as a refusal no retry can help'
unit ./idem '^TestExplainTxSortsCancellationReasons$'
suite '^TestConformance$/^Execute$/^tx-cancelled-throttling$'

mutant validation-read-as-retryable reasons pkg/idem/retry.go \
	'refused = at(i, errTxRefused)' \
	'refused = at(i, errThrottled)'
what 'ValidationError read as retryable throttling'
unit ./idem '^TestExplainTxSortsCancellationReasons$'
suite '^TestConformance$/^Execute$/^tx-cancelled-validation$'

mutant fence-failure-read-as-business-condition reasons pkg/idem/retry.go \
	'return at(fenceIndex, ErrLeaseLost)' \
	'return at(fenceIndex, ErrConditionFailed)'
what 'the fence'\''s (or claim'\''s) ConditionalCheckFailed read as a business condition'
unit ./idem '^TestZombieHolderCannotCommitAfterTakeover$'
suite '^TestConformance$/^Transact$/^none$'

mutant business-condition-read-as-lease-lost reasons pkg/idem/retry.go \
	'return at(i, ErrConditionFailed)' \
	'return at(i, ErrLeaseLost)'
what 'a business write'\''s ConditionalCheckFailed read as a lost lease'
unit ./idem '^TestBusinessConditionFailureWritesNothing$'

# --- batches -------------------------------------------------------------------

mutant batch-duplicate-behind-key-reuse batch pkg/idem/batch.go \
	'if !errors.Is(b.res[j].Err, ErrKeyReuse) || b.items[i].Fingerprint == b.items[j].Fingerprint {' \
	'if true {'
what 'a batch'\''s duplicate behind a key-reuse item is answered key reuse too'
fake '^TestBatchAnswersADuplicateBehindAnotherPayload$'

mutant batch-duplicate-of-another-payload-replayed batch pkg/idem/batch.go \
	'case it.Fingerprint != earlier.Fingerprint:' \
	'case false && it.Fingerprint != earlier.Fingerprint:'
what 'a batch'\''s duplicate with another payload replays the first item'\''s response'
unit ./idem '^TestExecuteBatchAnswersEachKeyForItself$'

mutant batch-own-record-replayed batch pkg/idem/batch.go \
	$'\t\tb.executed(i, rec.ExpiresAt)\n' \
	$'\t\tb.res[i] = BatchResult{Result: b.s.replay(c.id, c.fingerprint, rec)}\n'
what "a batch key that meets its own landed record is answered replayed, not executed"
unit ./idem '^TestATransactionRetriedOntoItsOwnWritesExecuted$'

mutant batch-vanished-record-unanswered batch pkg/idem/batch.go \
	$'\t\tif busy == nil {\n\t\t\treturn false\n' \
	$'\t\tif busy == nil {\n\t\t\treturn true\n'
what 'a batch key whose record vanished before it was read is left unanswered instead of claimed again'
unit ./idem '^TestAClaimWhoseRecordVanishedBeforeItWasReadClaimsAgain$'

mutant batch-contended-record-unavailable batch pkg/idem/batch.go \
	'b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, busy()}' \
	'b.res[i] = BatchResult{Result{Outcome: OutcomeUnavailable}, explained}'
what 'a batch key whose record stayed contended answers 503 instead of in flight'
unit ./idem '^TestABatchKeyWhoseRecordStaysHeldIsInFlight$'

# --- scopes ----------------------------------------------------------------------

mutant newscope-empty-principal-anonymous scope pkg/idem/scope.go \
	'return Scope{}, fmt.Errorf("%w: empty principal: name the caller, or choose the one anonymous scope with idem.NewAnonymousScope", ErrInvalidKey)' \
	'return NewAnonymousScope(operation, key)'
what 'NewScope makes an empty principal the anonymous scope'
unit ./idem '^TestNewScopeRejects$'
suite '^TestConformance$/^Run$/^empty-principal$'

# A caller named "anonymous" spelled as the anonymous scope is: it is
# served a guest's stored response (issue 36, hole 2).
mutant scopeid-named-anonymous-unmarked scope pkg/idem/internal/scopeid/scopeid.go \
	'case p.Principal == anonymousPrincipal:' \
	'case p.Principal == anonymousPrincipal && p.Anonymous:'
what 'a caller named "anonymous" gets the anonymous scope'\''s ID'
unit ./idem/idemhttp '^TestAUserNamedAnonymousIsNotTheAnonymousScope$'

mutant idemhttp-named-anonymous-is-anonymous scope pkg/idem/idemhttp/middleware.go \
	'if principal == "" { // the policy chose the anonymous scope' \
	'if principal == "" || principal == "anonymous" {'
what 'idemhttp puts a caller named "anonymous" in the anonymous scope'
unit ./idem/idemhttp '^TestAUserNamedAnonymousIsNotTheAnonymousScope$'

# --- operators: a span's scope hash, eviction ------------------------------------

# A scope hash anyone can compute (an HMAC under a key that is no secret):
# 10,000 guesses give a guessable key back (issue 36, hole 3).
mutant scope-hash-unkeyed operators pkg/idem/idemtrace/scopehash.go \
	'mac := hmac.New(sha256.New, h.key)' \
	'mac := hmac.New(sha256.New, nil)'
what 'a span'\''s scope hash under a key that is no secret'
otel '^TestTheScopeHashDoesNotGiveAGuessableKeyBack$'

mutant evict-live-holder operators pkg/idem/idemadmin/idemadmin.go \
	'cond += " AND (#st = :completed OR #exp < :now_s OR #lexp < :now_ms)"' \
	'cond += " AND (#st = :completed OR #exp < :now_s OR #lexp < :now_ms OR #lexp >= :now_ms)"'
what 'Evict deletes a live holder'\''s record without Force'
fake '^TestEvictAllowsFiveSecondsOfClockSkew$'

mutant evict-without-clock-skew operators pkg/idem/idemadmin/idemadmin.go \
	'now := time.Now().Add(-ClockSkew)' \
	'now := time.Now()'
what 'Evict trusts this machine'\''s clock to the millisecond'
fake '^TestEvictAllowsFiveSecondsOfClockSkew$'

mutant evict-ignores-landed-writes operators pkg/idem/idemadmin/idemadmin.go \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none)"' \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none OR #writes <> :none)"'
what 'Evict deletes a record whose DynamoDB writes landed'
unit ./idem/idemadmin '^TestEvictRefusesToRunLandedWritesAgain$'

mutant evict-trusts-uncounted-writes operators pkg/idem/idemadmin/idemadmin.go \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none)"' \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none OR attribute_not_exists(#writes))"'
what 'Evict deletes a record that does not count its writes'
unit ./idem/idemadmin '^TestEvictRefusesARecordThatDoesNotCountItsWrites$'

mutant commit-counts-no-writes operators pkg/idem/commit.go \
	'done, expires, cid, err := l.completion(resp, len(items))' \
	'done, expires, cid, err := l.completion(resp, 0)'
what 'a commit records no writes'
unit ./idem/idemadmin '^TestEvictRefusesToRunLandedWritesAgain$'

# --- call: a call's own settings (CallWait, CallRedelivers, CallRetention) ------
# Each reaches its own call and no other: not the store's other calls, not
# the calls its operation makes in turn.

mutant call-wait-ignored call pkg/idem/call.go \
	'c.wait = max(d, 0)' \
	'c.wait = max(c.wait, 0)'
what 'CallWait leaves the store'\''s wait in place'
unit ./idem '^TestWithoutWaitInFlightAtOnce$'

mutant call-wait-not-read call pkg/idem/wait.go \
	'return &waiting{max: c.wait, follow: c.redelivers}' \
	'return &waiting{max: s.wait, follow: c.redelivers}'
what 'a claim waits as the store says, whatever its call'\''s CallWait'
unit ./idem '^TestWithoutWaitInFlightAtOnce$'

mutant call-redelivers-ignored call pkg/idem/call.go \
	'c.redelivers = true' \
	'c.redelivers = false'
what 'CallRedelivers does not make a claim follow a running transaction'
unit ./idem '^TestMidCommitDuplicateWithAWaitReadsOnce$/^follow/'

mutant call-redelivers-not-read call pkg/idem/wait.go \
	'return &waiting{max: c.wait, follow: c.redelivers}' \
	'return &waiting{max: c.wait, follow: false}'
what 'a claim never follows a running transaction without a wait'
unit ./idem '^TestMidCommitDuplicateWithAWaitReadsOnce$/^follow/'

mutant call-retention-ignored call pkg/idem/call.go \
	'c.retention = d }' \
	'_ = d }'
what 'CallRetention leaves the store'\''s retention in place'
unit ./idem '^TestCallRetentionIsThatCallsAlone$'

mutant call-retention-under-a-lease call pkg/idem/admit.go \
	'if c.retention < s.lease+s.margin {' \
	'if false && c.retention < s.lease+s.margin {'
what 'a call whose retention is shorter than a lease runs (its record could expire under its holder)'
unit ./idem '^TestCallRetentionUnderALeaseIsRefused$'

mutant call-settings-reach-nested-calls call pkg/idem/scope.go \
	$'\treturn &callCtx{Context: ctx, scope: scope, scoped: scoped, trace: t, settings: settings}\n' \
	$'\tif outer, ok := settingsOf(ctx); ok {\n\t\tsettings = outer\n\t}\n\treturn &callCtx{Context: ctx, scope: scope, scoped: scoped, trace: t, settings: settings}\n'
what 'a call'\''s settings reach the calls its operation makes in turn'
unit ./idem '^TestCallRetentionIsThatCallsAlone$|^TestCallWaitDoesNotReachNestedCalls$'

mutant reserve-ignores-call-retention call pkg/idem/reserve.go \
	'retention: s.settingsFor(ctx).retention}' \
	'retention: s.retention}'
what 'Execute, Run and Do (reserve mode) keep their records for the store'\''s retention, not the call'\''s'
unit ./idem '^TestCallRetentionIsThatCallsAlone$'

mutant transact-ignores-call-retention call pkg/idem/transact.go \
	'retention: s.settingsFor(ctx).retention}' \
	'retention: s.retention}'
what 'Transact keeps its record for the store'\''s retention, not the call'\''s'
unit ./idem '^TestCallRetentionIsThatCallsAlone$'

mutant batch-ignores-call-retention call pkg/idem/batch.go \
	'retention: s.settingsFor(ctx).retention,' \
	'retention: s.retention,'
what 'ExecuteBatch keeps its records for the store'\''s retention, not the call'\''s'
unit ./idem '^TestCallRetentionIsThatCallsAlone$'

mutant mrsc-finish-ignores-call-retention call pkg/idem/intent.go \
	'intents: intents, retention: l.retention}' \
	'intents: intents, retention: l.store.retention}'
what 'on MRSC, the finish after a call'\''s writes sets the store'\''s retention, not the call'\''s'
unit ./idem '^TestMRSCCallRetentionIsThatCallsAlone$'

mutant mrsc-recovery-ignores-call-retention call pkg/idem/intent.go \
	'intents: rec.Intents, retention: s.settingsFor(ctx).retention}' \
	'intents: rec.Intents, retention: s.retention}'
what 'on MRSC, a next caller that applies a dead holder'\''s writes sets the store'\''s retention, not its call'\''s'
unit ./idem '^TestMRSCCallRetentionIsThatCallsAlone$'

# --- global: a table with multi-Region strong consistency (an Effect's
# commit without a transaction, intent.go; the sweep, sweep.go) and MREC
# (the modes a store refuses, table.go; a key's home, home.go) ------------

mutant apply-put-unmarked global pkg/idem/intent.go \
	$'\t\t\tcond := "NOT contains(#idem_m, :idem_m)"\n\t\t\tif in.Condition != "" {' \
	$'\t\t\tcond := "(NOT contains(#idem_m, :idem_m) OR contains(#idem_m, :idem_m))"\n\t\t\tif in.Condition != "" {'
what 'a recovery puts an unconditional Put'\''s item again over what another writer made of it since'
unit ./idem '^TestMRSCUnconditionalPutAppliedOnce$'

mutant apply-update-unmarked global pkg/idem/intent.go \
	$'\t\t\tcond := "NOT contains(#idem_m, :idem_m)"\n\t\t\tswitch in.At {' \
	$'\t\t\tcond := "(NOT contains(#idem_m, :idem_m) OR contains(#idem_m, :idem_m))"\n\t\t\tswitch in.At {'
what 'the retry of an attempt that landed with its answer lost applies an Update (a counter'\''s ADD) again'
unit ./idem '^TestMRSCUpdateWhoseAnswerWasLostAppliedOnce$'

mutant apply-unstamped global pkg/idem/intent.go \
	'onItem = "contains(#idem_p, :idem_m)"' \
	'onItem = "(contains(#idem_p, :idem_m) OR attribute_not_exists(#idem_p) OR attribute_exists(#idem_p))"'
what 'a recovery applies an Update or a Delete again once another writer replaced its item (its stamp gone)'
unit ./idem '^TestMRSCDeleteAppliedOnce$'

mutant apply-absent-skipped global pkg/idem/intent.go \
	$'\tcase in.At == stored.AtAbsent && in.Op == "Delete":\n' \
	$'\tcase in.At == stored.AtAbsent:\n'
what 'a recovery never applies an Update of an item absent at the decision once another writer created it'
unit ./idem '^TestMRSCUpdateOfAnItemCreatedSinceIsApplied$'

mutant guard-creates-its-item global pkg/idem/intent.go \
	'aws.String("attribute_exists(#idem_k) AND (" + g.cond + ")"),' \
	'aws.String("(attribute_exists(#idem_k) OR attribute_not_exists(#idem_k)) AND (" + g.cond + ")"),'
what 'a guard'\''s UpdateItem creates the item it checks, where there is none'
unit ./idem '^TestMRSCGuardsRefuseBeforeAnythingIsWritten$'

mutant sweep-deletes-a-live-record global pkg/idem/sweep.go \
	'aws.String("#exp < :now AND attribute_not_exists(#in)"),' \
	'aws.String("(#exp < :now OR #exp >= :now) AND attribute_not_exists(#in)"),'
what 'a sweep deletes a record claimed anew since it read it expired'
unit ./idem '^TestSweepNeverDeletesARecordClaimedSinceItsRead$'

mutant finish-never-lands global pkg/idem/intent.go \
	'ConditionExpression:       aws.String("#cid = :cid AND attribute_exists(#in)"),' \
	'ConditionExpression:       aws.String("#cid = :cid AND attribute_not_exists(#in)"),'
what 'an MRSC completion'\''s finish never lands: the record keeps its writes waiting'
unit ./idem '^TestMRSCCrashBetweenIntentSteps$'
suite '^TestConformanceOnMRSC$/^Execute$/^regions-mrsc$/^three$'

mutant mrec-without-a-mode-runs global pkg/idem/table.go \
	'case k == idemtable.MREC && s.homes == nil && s.region == "":' \
	'case k == idemtable.MREC && s.homes == nil && s.region == "" && s.table == "":'
what 'a store on an MREC table given neither WithHomes nor WithRegion runs, claiming in each caller'\''s Region'
unit ./idem '^TestStoreRefusesAModeItsTableCannotHonour$'

mutant homes-claim-locally global pkg/idem/home.go \
	$'\t}\n\treturn rt.db, nil\n}' \
	$'\t}\n\treturn r.h.clients[r.h.cfg.Region], nil\n}'
what 'a store with homes sends its requests to its own Region'\''s replica, not the key'\''s home'
unit ./idem '^TestHomesRunAKeyOnceAcrossRegions$'
suite '^TestConformanceAcrossRegions$/^Run$/^regions-homes$/^lag-1s$'

# --- The run -----------------------------------------------------------------

selected() { [[ -z ${MUTANTS:-} || $1 =~ $MUTANTS || $2 =~ $MUTANTS ]]; }

if [ "${1:-}" = -l ]; then
	for i in "${!names[@]}"; do printf '%s\t%s\t%s\n' "${cats[i]}" "${names[i]}" "${files[i]}"; done
	exit 0
fi
# -t: docs/testing.md's table, one row a mutant: its first deterministic
# target is the test that kills it.
if [ "${1:-}" = -t ]; then
	echo '| Category | Mutant | File | What it changes | Killed by |'
	echo '|---|---|---|---|---|'
	for i in "${!names[@]}"; do
		killer=
		while IFS=$'\t' read -r kind tdir pkgs pattern; do
			if [ "$kind" = det ] && [ -z "$killer" ]; then
				killer=$pattern
				killer=${killer#^} killer=${killer%\$}
				killer="\`$killer\` ($tdir${pkgs#.})"
			fi
		done <<<"${targets[i]}"
		printf '| %s | `%s` | `%s` | %s | %s |\n' "${cats[i]}" "${names[i]}" "${files[i]#pkg/idem/}" "${whats[i]}" "${killer:-none}"
	done
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # the EXIT trap still removes the mutated copies
start=$SECONDS

# indent prints its input indented, each line prefixed with $1.
indent() { sed "s/^/$1/"; }

# runs KIND DIR PACKAGES PATTERN OVERLAY LOG [FAILFAST]: one target's test
# run; its status. A deterministic run never runs the conformance suite.
runs() {
	local kind=$1 dir=$2 pkgs=$3 pattern=$4 overlay=$5 log=$6 failfast=${7--failfast} args=()
	[ -n "$overlay" ] && args+=("-overlay=$overlay")
	[ "$kind" = det ] && args+=(-skip "$suites")
	[ -n "$failfast" ] && args+=("$failfast")
	[ -n "$pattern" ] && args+=(-run "$pattern")
	read -r -a p <<<"$pkgs"
	# -vet=off: make test and make lint vet the tree; a mutant's vet would
	# only cost time.
	(cd "$root/$dir" && go test -vet=off "${args[@]}" -count=1 -timeout=300s "${p[@]}") >"$log" 2>&1
}

# failures LOG: the failing tests that have no failing subtest, each with
# the first line of its message.
failures() {
	awk '
		/^ *--- FAIL: / { name = $3; order[++n] = name; msg[name] = ""; cur = name; next }
		/^ *--- (PASS|SKIP): / { cur = ""; next }
		# The first line of its message; testify puts it on an "Error:" line.
		cur != "" && msg[cur] == "" && /^ +[^ ]/ {
			line = $0; sub(/^[ \t]+/, "", line)
			if (line ~ /^[A-Za-z0-9_]+\.go:[0-9]+: *$/) { loc[cur] = line; next }
			if (loc[cur] != "") { if (line !~ /^Error:/) next; sub(/^Error:[ \t]*/, "", line); line = loc[cur] " " line }
			msg[cur] = line
			next
		}
		# A conformance cell lists its violations below, each after "- ".
		cur ~ /^TestConformance/ && msg[cur] != "" && first[cur] == "" && /^ +- / { line = $0; sub(/^ +/, "", line); first[cur] = line }
		END {
			for (i = 1; i <= n; i++) {
				leaf = 1
				for (j = 1; j <= n; j++) if (index(order[j], order[i] "/") == 1) leaf = 0
				if (!leaf) continue
				m = msg[order[i]]
				if (length(m) > 240) m = substr(m, 1, 240) "..."
				print "--- FAIL: " order[i] (m == "" ? "" : ": " m)
				f = first[order[i]]
				if (length(f) > 400) f = substr(f, 1, 400) "..."
				if (f != "") print "    first violation " f
			}
		}' "$1"
}

# broke LOG: whether a failed run failed to build rather than test.
broke() { grep -q -E '\[(build|setup) failed\]|^# ' "$1" && ! grep -q -- '--- FAIL: ' "$1"; }

# killers LOG: what failed in a run that did.
killers() {
	local k
	k=$(failures "$1")
	if [ -z "$k" ]; then
		k="(no --- FAIL line) $(grep -m1 -E '^(panic|fatal error|FAIL)' "$1" || true)"
	fi
	printf '%s\n' "$k"
}

# first LOG: the first failing test of a run that failed, its name alone.
first() { killers "$1" | sed -n '1s/^--- FAIL: \([^:]*\).*/\1/p'; }

# leaves LOG: the names of the failing tests of a run, one a line.
leaves() { failures "$1" | sed -n 's/^--- FAIL: \([^:]*\).*/\1/p'; }

# trial I: mutant I's whole trial. It writes, in $tmp/NAME: verdict
# (killed, stale, suite-only, survived, broken), line (the one line the
# run prints for it) and report (what follows that line).
trial() {
	local i=$1
	local name=${names[i]} file=${files[i]} from=${froms[i]} to=${tos[i]}
	local dir=$tmp/$name path=$root/${files[i]} where="${cats[i]}/$name (${files[i]#pkg/idem/})"
	mkdir -p "$dir"
	exec 3>"$dir/report"
	# finish VERDICT LINE: the trial's end; fragments follow a line that is no
	# kill (or every line, with MUTANTS_VERBOSE=1).
	finish() {
		if [ "$1" != killed ] || [ "${MUTANTS_VERBOSE:-}" = 1 ]; then
			{
				printf '%s\n' "${from%$'\n'}" | indent '        - '
				printf '%s\n' "${to%$'\n'}" | indent '        + '
			} >"$dir/fragments"
		fi
		exec 3>&-
		printf '%s\n' "$2" >"$dir/line"
		echo "$1" >"$dir/verdict"
	}
	if [ ! -f "$path" ]; then
		finish broken "BROKEN    $where: $file does not exist: update the list in scripts/mutants.sh"
		return
	fi
	local src after
	src=$(<"$path")$'\n' # $(<) drops the final newline; gofmt'd files have one
	after=${src#*"$from"}
	if [ "$after" = "$src" ]; then
		finish broken "BROKEN    $where: the fragment is not in $file: update the list in scripts/mutants.sh"
		return
	fi
	if [ "${after#*"$from"}" != "$after" ]; then
		finish broken "BROKEN    $where: the fragment is in $file more than once: make it unique in scripts/mutants.sh"
		return
	fi
	printf '%s' "${src%%"$from"*}$to$after" >"$dir/$(basename "$file")"
	printf '{"Replace":{"%s":"%s"}}\n' "$path" "$dir/$(basename "$file")" >"$dir/overlay.json"
	local overlay=$dir/overlay.json kind tdir pkgs pattern t0 line=""
	if [ "${MUTANTS_SURVEY:-}" = 1 ]; then
		survey "$dir" "$overlay"
		case $(<"$dir/survey-verdict") in
		killed) finish killed "killed    $where: by $(wc -l <"$dir/survey-killers") deterministic tests" ;;
		broken) finish broken "BROKEN    $where: the mutant does not build" ;;
		*) finish survived "SURVIVED  $where: no deterministic test fails" ;;
		esac
		return
	fi
	# Its deterministic targets, in order, until one kills it.
	while IFS=$'\t' read -r kind tdir pkgs pattern; do
		[ "$kind" = det ] || continue
		t0=$SECONDS
		if runs det "$tdir" "$pkgs" "$pattern" "$overlay" "$dir/test.log"; then
			if grep -q 'no tests to run' "$dir/test.log"; then
				finish broken "BROKEN    $where: -run '$pattern' matches no test in $tdir $pkgs: update the list in scripts/mutants.sh"
				return
			fi
			echo "          missed by (cd $tdir && go test -run '$pattern' $pkgs) in $((SECONDS - t0)) s" >&3
			continue
		fi
		if broke "$dir/test.log"; then
			echo "          the mutant does not build:" >&3
			grep -v -E '^(FAIL|ok) ' "$dir/test.log" | head -n 10 | indent '            ' >&3
			finish broken "BROKEN    $where: the mutant does not build"
			return
		fi
		line="killed    $where: deterministic, by $(first "$dir/test.log") (cd $tdir && go test -run '$pattern' $pkgs; $((SECONDS - t0)) s)"
		killers "$dir/test.log" | indent '          ' >&3
		break
	done <<<"${targets[i]}"
	if [ -z "$line" ]; then
		# An honest count: every deterministic test, before saying none
		# kills it.
		survey "$dir" "$overlay"
		case $(<"$dir/survey-verdict") in
		broken)
			finish broken "BROKEN    $where: the mutant does not build"
			return
			;;
		stale)
			finish stale "STALE     $where: deterministic, but only by tests the list does not name (below): name one in scripts/mutants.sh"
			return
			;;
		esac
	fi
	# The conformance suite: what kills a mutant no deterministic test
	# does, or (MUTANTS_SUITE=1) whether it kills the others too.
	if [ -z "$line" ] || [ "${MUTANTS_SUITE:-}" = 1 ]; then
		local suite_says="no suite target"
		while IFS=$'\t' read -r kind tdir pkgs pattern; do
			[ "$kind" = suite ] || continue
			t0=$SECONDS
			if runs suite "$tdir" "$pkgs" "$pattern" "$overlay" "$dir/suite.log"; then
				suite_says="the conformance suite misses it"
				echo "          the conformance suite missed it (cd $tdir && go test -run '$pattern' $pkgs; $((SECONDS - t0)) s)" >&3
				continue
			fi
			suite_says="the conformance suite kills it too"
			echo "          the conformance suite kills it (cd $tdir && go test -run '$pattern' $pkgs; $((SECONDS - t0)) s):" >&3
			killers "$dir/suite.log" | indent '            ' >&3
			break
		done <<<"${targets[i]}"
		if [ -z "$line" ]; then
			if [ "$suite_says" = "the conformance suite kills it too" ]; then
				finish suite-only "SUITE     $where: only the conformance suite kills it, no deterministic test does"
			else
				finish survived "SURVIVED  $where: no test fails with this mutant"
			fi
			return
		fi
		line+="; $suite_says"
	fi
	finish killed "$line"
}

# survey DIR OVERLAY: every deterministic test against the mutant; writes
# DIR/survey-killers (the failing tests, module by module) and
# DIR/survey-verdict: killed (for MUTANTS_SURVEY) or stale when some
# fail, broken, or none.
survey() {
	local dir=$1 overlay=$2 entry tdir pkgs t0
	: >"$dir/survey-killers"
	t0=$SECONDS
	for entry in "${everything[@]}"; do
		IFS=$'\t' read -r tdir pkgs <<<"$entry"
		if runs det "$tdir" "$pkgs" "" "$overlay" "$dir/survey.log" ""; then
			continue
		fi
		if broke "$dir/survey.log"; then
			echo "          the mutant does not build:" >&3
			grep -v -E '^(FAIL|ok) ' "$dir/survey.log" | head -n 10 | indent '            ' >&3
			echo broken >"$dir/survey-verdict"
			return
		fi
		leaves "$dir/survey.log" | sed "s|^|$tdir: |" >>"$dir/survey-killers"
	done
	if [ ! -s "$dir/survey-killers" ]; then
		echo "          no deterministic test fails ($((SECONDS - t0)) s)" >&3
		echo none >"$dir/survey-verdict"
		return
	fi
	echo "          the deterministic tests that fail ($((SECONDS - t0)) s):" >&3
	if [ "${MUTANTS_SURVEY:-}" = 1 ]; then
		indent '            ' <"$dir/survey-killers" >&3
		echo killed >"$dir/survey-verdict"
		return
	fi
	head -n 12 "$dir/survey-killers" | indent '            ' >&3
	echo stale >"$dir/survey-verdict"
}

order=()
for i in "${!names[@]}"; do
	selected "${names[i]}" "${cats[i]}" && order+=("$i")
done
total=${#order[@]}
jobs=${MUTANTS_JOBS:-$(($(nproc) < 4 ? $(nproc) : 4))}
echo "mutants: $total mutants of pkg/idem, each applied with go test -overlay (the tree is never edited), each to be killed by a deterministic test; $jobs at a time"

if [ "${MUTANTS_BASELINE:-}" = 1 ]; then
	echo "mutants: the targets on the unmutated tree first"
	declare -A seen
	for i in "${order[@]}"; do
		while IFS=$'\t' read -r kind dir pkgs pattern; do
			[ -n "$dir" ] || continue
			key="$kind $dir $pkgs $pattern"
			[ -z "${seen[$key]:-}" ] || continue
			seen[$key]=1
			if ! runs "$kind" "$dir" "$pkgs" "$pattern" "" "$tmp/baseline.log"; then
				echo "mutants: FAIL: the target $key fails on the unmutated tree:"
				indent '  ' <"$tmp/baseline.log" | tail -n 40
				exit 1
			fi
		done <<<"${targets[i]}"
	done
fi

# The trials run $jobs at a time; each prints, in the list's order, one
# line (its verdict, and for a kill whether a deterministic test made it
# and which), then the failing tests' first messages.
declare -A counts
killed=() stale=() suiteonly=() survived=() broken=()
printed=0
flush() {
	while [ "$printed" -lt "$total" ]; do
		local i=${order[printed]}
		local name=${names[i]}
		[ -f "$tmp/$name/verdict" ] || return 0
		printf '[%3d/%d] %s\n' "$((printed + 1))" "$total" "$(<"$tmp/$name/line")"
		[ ! -f "$tmp/$name/fragments" ] || cat "$tmp/$name/fragments"
		cat "$tmp/$name/report"
		case $(<"$tmp/$name/verdict") in
		killed)
			killed+=("$name")
			counts[${cats[i]}]=$((${counts[${cats[i]}]:-0} + 1))
			;;
		stale) stale+=("$name") ;;
		suite-only) suiteonly+=("$name") ;;
		broken) broken+=("$name") ;;
		*) survived+=("$name") ;;
		esac
		printed=$((printed + 1))
	done
}
running=0
for i in "${order[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	trial "$i" &
	running=$((running + 1))
	flush
done
wait
flush
# A trial that ended without a verdict (it should not happen) is broken.
for i in "${order[@]:printed}"; do
	mkdir -p "$tmp/${names[i]}"
	: >>"$tmp/${names[i]}/report"
	echo "BROKEN    ${cats[i]}/${names[i]}: the trial ended without a verdict" >"$tmp/${names[i]}/line"
	echo broken >"$tmp/${names[i]}/verdict"
done
flush

per=""
for c in claim judgement lost-answer fence release watchdog acknowledgement reasons batch scope operators call global; do
	if [ -n "${counts[$c]:-}" ]; then per+="${per:+, }$c ${counts[$c]}"; fi
done
if [ "${MUTANTS_SURVEY:-}" = 1 ]; then
	echo "mutants: survey: ${#killed[@]} of $total failed some deterministic test${per:+ ($per)}, ${#survived[@]} none, ${#broken[@]} broken, in $((SECONDS - start)) s"
	exit 0
fi
echo "mutants: ${#killed[@]} of $total killed by a deterministic test${per:+ ($per)}; ${#suiteonly[@]} only by the conformance suite, ${#stale[@]} by a test the list does not name, ${#survived[@]} survived, ${#broken[@]} broken, in $((SECONDS - start)) s"
status=0
if [ ${#suiteonly[@]} -gt 0 ]; then
	echo "mutants: FAIL: killed only by the conformance suite (write a deterministic test that kills each): ${suiteonly[*]}"
	status=1
fi
if [ ${#stale[@]} -gt 0 ]; then
	echo "mutants: FAIL: killed by deterministic tests the list does not name (update scripts/mutants.sh): ${stale[*]}"
	status=1
fi
if [ ${#survived[@]} -gt 0 ]; then
	echo "mutants: FAIL: survived (no test notices the change): ${survived[*]}"
	status=1
fi
if [ ${#broken[@]} -gt 0 ]; then
	echo "mutants: FAIL: broken (fix the list in scripts/mutants.sh): ${broken[*]}"
	status=1
fi
exit $status
