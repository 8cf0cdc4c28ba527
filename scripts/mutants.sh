#!/usr/bin/env bash
# The mutation check behind `make mutants` (issue 26, point 5): a fixed list
# of hand-made mutants of the conditions that carry exactly once in
# pkg/idem (the claim, the takeover, the fence, the release, the expiry,
# the heartbeat's watchdog, the reading of cancellation reasons, Run's
# retried completion, the acknowledgement rule of idemsqs, idemevent and
# idemhttp, NewScope's refusal of a nameless caller, a caller named
# "anonymous" kept out of the anonymous scope, ExecuteBatch's duplicate
# behind key reuse, the key of a span's scope hash, eviction's refusal to
# run landed writes again, and on a table with multi-Region strong
# consistency the apply-once markers, the guards, the sweep's delete and
# the finish; on MREC a key's home and the refusal of a store with no
# mode), each of which the tests must kill.
#
# A mutant is a file, an exact fragment of it and its replacement, a name,
# and the tests that must kill it: a module directory, a package list and
# a -run pattern (`suite` is the conformance module,
# pkg/idem/idemconform; `unit` the pkg module). It is applied with
# `go test -overlay` (a mutated copy in a temporary directory stands in for
# the file), never by editing the tree, so an interrupted run leaves
# nothing behind. Its targets run in order, without -race and with
# -failfast, until one fails: that kills it, and the failing tests are
# printed with their first message. A mutant no target kills fails the
# script, and so does a fragment that is not in its file exactly once (a
# refactor must update this list, never silently skip a mutant) or a
# mutant that does not build.
#
# Placeholders stay in use in every mutated expression (a clause is made
# always true or always false rather than dropped): the strict store, as
# DynamoDB does, refuses an expression attribute name or value that no
# expression uses, and a mutant killed by that refusal would prove nothing.
#
# MUTANTS=<regexp> runs only the mutants whose name matches it;
# MUTANTS_BASELINE=1 first runs every target on the unmutated tree (each
# must pass, or a kill would prove nothing: CI runs `make test`, which
# runs every target, just before); `scripts/mutants.sh -l` lists the
# mutants.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

names=() files=() froms=() tos=() targets=()

# mutant NAME FILE FROM TO: the next mutant; its targets follow.
mutant() {
	names+=("$1") files+=("$2") froms+=("$3") tos+=("$4") targets+=("")
}
# kill DIR PACKAGES PATTERN: a test run that must kill the last mutant.
kill_with() {
	local i=$((${#names[@]} - 1))
	targets[i]+="$1"$'\t'"$2"$'\t'"$3"$'\n'
}
suite() { kill_with pkg/idem/idemconform . "$1"; }
unit() { kill_with pkg "$1" "$2"; }

# --- The claim: claim.go's claimCondition ---------------------------------

mutant claim-without-absent-clause pkg/idem/claim.go \
	'"attribute_not_exists(#id) OR #exp < :now_s OR "' \
	'"(attribute_exists(#id) AND #exp < :now_s) OR "'
# A fresh key can no longer be claimed.
suite '^TestConformance$/^Run$/^none$'

mutant takeover-ignores-fingerprint pkg/idem/claim.go \
	'#lease_exp < :now_ms AND #fp = :fp)' \
	'#lease_exp < :now_ms AND (#fp = :fp OR #fp <> :fp))'
# A dead holder's key taken over by another payload: key reuse, never run.
suite '^TestTakeoverByAnotherPayloadIsKeyReuse$'

mutant takeover-ignores-lease pkg/idem/claim.go \
	'(#st = :in_progress AND #lease_exp < :now_ms AND' \
	'(#st = :in_progress AND (#lease_exp < :now_ms OR #lease_exp >= :now_ms) AND'
# A live holder's key taken over.
suite '^TestLeaseEndsToTheMillisecond$'

mutant claim-ignores-status pkg/idem/claim.go \
	'"(#st = :in_progress AND #lease_exp < :now_ms' \
	'"((#st = :in_progress OR #st <> :in_progress) AND #lease_exp < :now_ms'
# A completed key executed again once its old lease time has passed.
suite '^TestRetentionToTheSecond$'

# --- The expiry: the claim's "#exp < :now_s", and judge's reading of it -----

mutant expiry-never pkg/idem/claim.go \
	'OR #exp < :now_s OR' \
	'OR (#exp < :now_s AND :now_s < #exp) OR'
suite '^TestRetentionToTheSecond$'

mutant expiry-condition-one-second-early pkg/idem/claim.go \
	'OR #exp < :now_s OR' \
	'OR #exp <= :now_s OR'
suite '^TestRetentionToTheSecond$'

mutant expiry-judged-one-second-early pkg/idem/internal/record/record.go \
	'return r.ExpiresAt.Unix() < now.Unix()' \
	'return r.ExpiresAt.Unix() <= now.Unix()'
suite '^TestRetentionToTheSecond$'

# --- The fence: every write a holder makes ---------------------------------

mutant fence-ignores-token pkg/idem/lease.go \
	'const fence = "#lt = :mine AND #st = :in_progress"' \
	'const fence = "(#lt = :mine OR #lt <> :mine) AND #st = :in_progress"'
suite '^TestTakeoverFencesTheOldHolder$'

mutant fence-ignores-status pkg/idem/lease.go \
	'const fence = "#lt = :mine AND #st = :in_progress"' \
	'const fence = "#lt = :mine AND (#st = :in_progress OR #st <> :in_progress)"'
unit ./idem '^TestALeaseCompletesOnce$'

# --- The release ------------------------------------------------------------

mutant release-unfenced pkg/idem/release.go \
	$'\t\t\tConditionExpression:                 aws.String(fence),\n\t\t\tExpressionAttributeNames:            l.fenceNames(),\n\t\t\tExpressionAttributeValues:           l.fenceValues(),\n' \
	''
unit ./idem '^TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord$'

mutant release-deletes-completed pkg/idem/release.go \
	'ConditionExpression:                 aws.String(fence),' \
	'ConditionExpression:                 aws.String("#lt = :mine AND (#st = :in_progress OR #st <> :in_progress)"),'
unit ./idem '^TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord$'

# --- The heartbeat's watchdog ----------------------------------------------

mutant heartbeat-without-watchdog pkg/idem/lease.go \
	'watchdog := time.AfterFunc(left(), func() { lost(ended(nil)) })' \
	'watchdog := time.AfterFunc(left(), func() {})'
suite '^TestHolderStopsWhenItsLeaseCannotBeRenewed$'

# --- Cancellation reasons: explainTx ---------------------------------------

mutant throttling-read-as-refused pkg/idem/retry.go \
	'case "ThrottlingError", "ProvisionedThroughputExceeded":' \
	'case "ProvisionedThroughputExceeded":'
suite '^TestConformance$/^Execute$/^tx-cancelled-throttling$'

mutant validation-read-as-retryable pkg/idem/retry.go \
	'refused = at(i, errTxRefused)' \
	'refused = at(i, errThrottled)'
suite '^TestConformance$/^Execute$/^tx-cancelled-validation$'

mutant fence-failure-read-as-business-condition pkg/idem/retry.go \
	'return at(fenceIndex, ErrLeaseLost)' \
	'return at(fenceIndex, ErrConditionFailed)'
# Transact's claim, whose failed condition is read as the fence's: a
# duplicate told of a business condition instead of the winner's answer.
suite '^TestConformance$/^Transact$/^none$'
# A zombie holder's commit, fenced out.
unit ./idem '^TestZombieHolderCannotCommitAfterTakeover$'

# --- Run's completion, retried while the lease lasts -----------------------

mutant completion-not-retried pkg/idem/commit.go \
	$'\t\ttime.Sleep(pause)\n' \
	$'\t\treturn expires, err\n'
# One completion throttled past the SDK's retries, every time: the
# suite's cell meets it only when its random faults line up.
unit ./idem '^TestRunRecordsAnEffectWhoseFirstCompletionWasThrottled$'
suite '^TestConformance$/^Run$/^completion-throttled$'

mutant completion-retried-into-the-deadline pkg/idem/lease.go \
	'if deadline, ok := ctx.Deadline(); ok && deadline.Add(-l.store.margin).Before(until) {' \
	'if deadline, ok := ctx.Deadline(); false && ok && deadline.Add(-l.store.margin).Before(until) {'
# Run answering only at its deadline: a Lambda invocation timed out.
suite '^TestRunAnswersBeforeItsDeadlineWhenItsCompletionIsRefused$'

# --- The acknowledgement rule: an effect not recorded is acknowledged -------

mutant idemsqs-redelivers-not-recorded pkg/idem/internal/batchway/batchway.go \
	'return r.Err != nil && r.Outcome != idem.OutcomeNotRecorded' \
	'return r.Err != nil'
suite '^TestConformance$/^idemsqs.Run$/^completion-refused$'

mutant idemevent-fails-not-recorded pkg/idem/idemevent/idemevent.go \
	$'\t\t\treturn out, nil\n' \
	$'\t\t\treturn out, err\n'
suite '^TestConformance$/^idemevent$/^completion-refused$'

mutant idemhttp-problem-for-not-recorded pkg/idem/idemhttp/lambda.go \
	'return ev.to(req, replayOf(res.Response), false), nil // the effect happened: say so' \
	'return ev.to(req, m.problemFor(err).response(), false), nil'
suite '^TestConformance$/^idemhttp.APIGatewayV2$/^completion-refused$'

# --- Scopes and batches ------------------------------------------------------

mutant newscope-empty-principal-anonymous pkg/idem/scope.go \
	'return Scope{}, fmt.Errorf("%w: empty principal: name the caller, or choose the one anonymous scope with idem.NewAnonymousScope", ErrInvalidKey)' \
	'return NewAnonymousScope(operation, key)'
suite '^TestConformance$/^Run$/^empty-principal$'

# A caller named "anonymous" spelled as the anonymous scope is: it is
# served a guest's stored response (issue 36, hole 2).
mutant scopeid-named-anonymous-unmarked pkg/idem/internal/scopeid/scopeid.go \
	'case p.Principal == anonymousPrincipal:' \
	'case p.Principal == anonymousPrincipal && p.Anonymous:'
unit ./idem/idemhttp '^TestAUserNamedAnonymousIsNotTheAnonymousScope$'

mutant idemhttp-named-anonymous-is-anonymous pkg/idem/idemhttp/middleware.go \
	'if principal == "" { // the policy chose the anonymous scope' \
	'if principal == "" || principal == "anonymous" {'
unit ./idem/idemhttp '^TestAUserNamedAnonymousIsNotTheAnonymousScope$'

mutant batch-duplicate-behind-key-reuse pkg/idem/batch.go \
	'if !errors.Is(b.res[j].Err, ErrKeyReuse) || b.items[i].Fingerprint == b.items[j].Fingerprint {' \
	'if true {'
suite '^TestBatchAnswersADuplicateBehindAnotherPayload$'

# --- Operators: a span's scope hash, eviction ---------------------------------

# A scope hash anyone can compute (an HMAC under a key that is no secret):
# 10,000 guesses give a guessable key back (issue 36, hole 3).
mutant scope-hash-unkeyed pkg/idem/idemtrace/scopehash.go \
	'mac := hmac.New(sha256.New, h.key)' \
	'mac := hmac.New(sha256.New, nil)'
kill_with pkg/idem/idemotel . '^TestTheScopeHashDoesNotGiveAGuessableKeyBack$'

# Eviction that runs landed DynamoDB writes again without being asked.
mutant evict-ignores-landed-writes pkg/idem/idemadmin/idemadmin.go \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none)"' \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none OR #writes <> :none)"'
unit ./idem/idemadmin '^TestEvictRefusesToRunLandedWritesAgain$'

mutant evict-trusts-uncounted-writes pkg/idem/idemadmin/idemadmin.go \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none)"' \
	'cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none OR attribute_not_exists(#writes))"'
unit ./idem/idemadmin '^TestEvictRefusesARecordThatDoesNotCountItsWrites$'

mutant commit-counts-no-writes pkg/idem/commit.go \
	'done, expires, cid, err := l.completion(resp, len(items))' \
	'done, expires, cid, err := l.completion(resp, 0)'
unit ./idem/idemadmin '^TestEvictRefusesToRunLandedWritesAgain$'

# --- Global tables with multi-Region strong consistency: an Effect's commit
# without a transaction (intent.go) and the sweep (sweep.go) ---------------

# A recovery that puts an unconditional Put's item again over what another
# writer made of it since.
mutant apply-put-unmarked pkg/idem/intent.go \
	$'\t\t\tcond := "NOT contains(#idem_m, :idem_m)"\n\t\t\tif in.Condition != "" {' \
	$'\t\t\tcond := "(NOT contains(#idem_m, :idem_m) OR contains(#idem_m, :idem_m))"\n\t\t\tif in.Condition != "" {'
unit ./idem '^TestMRSCUnconditionalPutAppliedOnce$'

# An Update (a counter's ADD) applied again by the retry of an attempt that
# landed with its answer lost.
mutant apply-update-unmarked pkg/idem/intent.go \
	$'\t\t\tcond := "NOT contains(#idem_m, :idem_m)"\n\t\t\tswitch in.At {' \
	$'\t\t\tcond := "(NOT contains(#idem_m, :idem_m) OR contains(#idem_m, :idem_m))"\n\t\t\tswitch in.At {'
unit ./idem '^TestMRSCUpdateWhoseAnswerWasLostAppliedOnce$'

# A recovery that applies an Update or a Delete again once its item lost
# its stamp (another writer replaced it since).
mutant apply-unstamped pkg/idem/intent.go \
	'onItem = "contains(#idem_p, :idem_m)"' \
	'onItem = "(contains(#idem_p, :idem_m) OR attribute_not_exists(#idem_p) OR attribute_exists(#idem_p))"'
unit ./idem '^TestMRSCDeleteAppliedOnce$'

# A recovery that applies an Update of an item it created again, once
# another writer replaced that item.
mutant apply-absent-announced pkg/idem/intent.go \
	'onItem = "attribute_not_exists(#idem_k) AND NOT contains(#idem_m, :idem_m)"' \
	'onItem = "(attribute_not_exists(#idem_k) OR attribute_exists(#idem_k)) AND NOT contains(#idem_m, :idem_m)"'
unit ./idem '^TestMRSCUpdateAppliedOnceAfterTheItemWasReplaced$'

# A recovery that never applies an Update of an item absent at the
# decision once another writer created it, announced or not.
mutant apply-absent-unannounced pkg/idem/intent.go \
	$'\t\tcase before:\n' \
	$'\t\tcase before || true:\n'
unit ./idem '^TestMRSCUpdateOfAnItemCreatedSinceIsApplied$'

# A guard whose UpdateItem creates the item it checks, where there is none.
mutant guard-creates-its-item pkg/idem/intent.go \
	'aws.String("attribute_exists(#idem_k) AND (" + g.cond + ")"),' \
	'aws.String("(attribute_exists(#idem_k) OR attribute_not_exists(#idem_k)) AND (" + g.cond + ")"),'
unit ./idem '^TestMRSCGuardsRefuseBeforeAnythingIsWritten$'

# A sweep that deletes a record claimed anew since it read it, expired.
mutant sweep-deletes-a-live-record pkg/idem/sweep.go \
	'aws.String("#exp < :now AND attribute_not_exists(#in)"),' \
	'aws.String("(#exp < :now OR #exp >= :now) AND attribute_not_exists(#in)"),'
unit ./idem '^TestSweepNeverDeletesARecordClaimedSinceItsRead$'

# --- Global tables: the modes a store refuses (table.go), a key's home
# (home.go), and MRSC's finish through the suite across Regions -------------

# A store on an MREC table given neither WithHomes nor WithRegion runs,
# claiming in each caller's Region.
mutant mrec-without-a-mode-runs pkg/idem/table.go \
	'case k == idemtable.MREC && s.homes == nil && s.region == "":' \
	'case k == idemtable.MREC && s.homes == nil && s.region == "" && s.table == "":'
unit ./idem '^TestStoreRefusesAModeItsTableCannotHonour$'

# A store with homes whose requests go to its own Region's replica.
mutant homes-claim-locally pkg/idem/home.go \
	$'\t}\n\treturn rt.db, nil\n}' \
	$'\t}\n\treturn r.h.clients[r.h.cfg.Region], nil\n}'
suite '^TestConformanceAcrossRegions$/^Run$/^regions-homes$/^lag-1s$'

# A finish that never lands: the record keeps its writes waiting.
mutant finish-never-lands pkg/idem/intent.go \
	'ConditionExpression:       aws.String("#cid = :cid AND attribute_exists(#in)"),' \
	'ConditionExpression:       aws.String("#cid = :cid AND attribute_not_exists(#in)"),'
suite '^TestConformanceOnMRSC$/^Execute$/^regions-mrsc$/^three$'

# --- The run -----------------------------------------------------------------

if [ "${1:-}" = -l ]; then
	for i in "${!names[@]}"; do printf '%s\t%s\n' "${names[i]}" "${files[i]}"; done
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # the EXIT trap still removes the mutated copies
only=${MUTANTS:-}
start=$SECONDS
killed=0 survived=() broken=()

# indent prints its input indented, each line prefixed with $1.
indent() { sed "s/^/$1/"; }

# runs DIR PACKAGES PATTERN OVERLAY LOG: one target's test run; its status.
runs() {
	local dir=$1 pkgs=$2 pattern=$3 overlay=$4 log=$5 args=()
	[ -n "$overlay" ] && args+=("-overlay=$overlay")
	read -r -a p <<<"$pkgs"
	(cd "$root/$dir" && go test "${args[@]}" -count=1 -failfast -timeout=120s -run "$pattern" "${p[@]}") >"$log" 2>&1
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
		cur != "" && msg[cur] != "" && first[cur] == "" && /^ +- / { line = $0; sub(/^ +/, "", line); first[cur] = line }
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

total=0
for i in "${!names[@]}"; do
	[[ -z $only || ${names[i]} =~ $only ]] && total=$((total + 1))
done
echo "mutants: $total mutants of pkg/idem, each applied with go test -overlay (the tree is never edited), each to be killed"

if [ "${MUTANTS_BASELINE:-}" = 1 ]; then
	echo "mutants: the targets on the unmutated tree first"
	declare -A seen
	for i in "${!names[@]}"; do
		[[ -z $only || ${names[i]} =~ $only ]] || continue
		while IFS=$'\t' read -r dir pkgs pattern; do
			[ -n "$dir" ] || continue
			key="$dir $pkgs $pattern"
			[ -z "${seen[$key]:-}" ] || continue
			seen[$key]=1
			if ! runs "$dir" "$pkgs" "$pattern" "" "$tmp/baseline.log"; then
				echo "mutants: FAIL: the target $key fails on the unmutated tree:"
				indent '  ' <"$tmp/baseline.log" | tail -n 40
				exit 1
			fi
		done <<<"${targets[i]}"
	done
fi

n=0
for i in "${!names[@]}"; do
	name=${names[i]} file=${files[i]} from=${froms[i]} to=${tos[i]}
	[[ -z $only || $name =~ $only ]] || continue
	n=$((n + 1))
	path=$root/$file
	printf '[%2d/%d] %s (%s)\n' "$n" "$total" "$name" "$file"
	printf '%s\n' "${from%$'\n'}" | indent '        - '
	printf '%s\n' "${to%$'\n'}" | indent '        + '
	if [ ! -f "$path" ]; then
		echo "        BROKEN: $file does not exist: update the list in scripts/mutants.sh"
		broken+=("$name")
		continue
	fi
	src=$(<"$path")$'\n' # $(<) drops the final newline; gofmt'd files have one
	after=${src#*"$from"}
	if [ "$after" = "$src" ]; then
		echo "        BROKEN: the fragment is not in $file: update the list in scripts/mutants.sh"
		broken+=("$name")
		continue
	fi
	if [ "${after#*"$from"}" != "$after" ]; then
		echo "        BROKEN: the fragment is in $file more than once: make it unique in scripts/mutants.sh"
		broken+=("$name")
		continue
	fi
	dir=$tmp/$name
	mkdir -p "$dir"
	printf '%s' "${src%%"$from"*}$to$after" >"$dir/$(basename "$file")"
	printf '{"Replace":{"%s":"%s"}}\n' "$path" "$dir/$(basename "$file")" >"$dir/overlay.json"
	verdict=survived
	while IFS=$'\t' read -r tdir pkgs pattern; do
		[ -n "$tdir" ] || continue
		t0=$SECONDS
		if runs "$tdir" "$pkgs" "$pattern" "$dir/overlay.json" "$dir/test.log"; then
			if grep -q 'no tests to run' "$dir/test.log"; then
				echo "        BROKEN: -run '$pattern' matches no test in $tdir $pkgs: update the list in scripts/mutants.sh"
				verdict=broken
				break
			fi
			echo "        survived: cd $tdir && go test -run '$pattern' $pkgs ($((SECONDS - t0)) s)"
			continue
		fi
		if grep -q -E '\[(build|setup) failed\]|^# ' "$dir/test.log" && ! grep -q -- '--- FAIL: ' "$dir/test.log"; then
			echo "        BROKEN: the mutant does not build:"
			grep -v -E '^(FAIL|ok) ' "$dir/test.log" | head -n 10 | indent '          '
			verdict=broken
			break
		fi
		killers=$(failures "$dir/test.log")
		if [ -z "$killers" ]; then
			killers="(no --- FAIL line) $(grep -m1 -E '^(panic|fatal error|FAIL)' "$dir/test.log" || true)"
		fi
		echo "        killed in $((SECONDS - t0)) s by (cd $tdir && go test -run '$pattern' $pkgs):"
		printf '%s\n' "$killers" | indent '          '
		verdict=killed
		break
	done <<<"${targets[i]}"
	case $verdict in
	killed) killed=$((killed + 1)) ;;
	broken) broken+=("$name") ;;
	*)
		echo "        SURVIVED: no test failed with this mutant"
		survived+=("$name")
		;;
	esac
done

echo "mutants: $killed of $n killed, ${#survived[@]} survived, ${#broken[@]} broken, in $((SECONDS - start)) s"
status=0
if [ ${#survived[@]} -gt 0 ]; then
	echo "mutants: FAIL: survived (no test notices the change): ${survived[*]}"
	status=1
fi
if [ ${#broken[@]} -gt 0 ]; then
	echo "mutants: FAIL: broken (fix the list in scripts/mutants.sh): ${broken[*]}"
	status=1
fi
exit $status
