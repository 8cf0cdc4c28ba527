// Command apicheck keeps the library's exported API recorded, holds it
// to what its major version released, and refuses a breaking change the
// changelog does not name.
//
//	go run ./internal/tools/apicheck            # make api-check
//	go run ./internal/tools/apicheck -update    # make api-update
//	go run ./internal/tools/apicheck -release   # make api-release
//
// It lists the exported API of every importable package of every module
// under -lib (internal packages and commands are not API) in the manner
// of Go's own api files, one declaration a line (see apiLines), and
// compares it with the files in -api, one per package, and in -baseline:
//
//   - a line of the baseline (the API the major version released, a
//     file per package, committed so that a fresh clone without tags
//     holds it) the library no longer has breaks the promise: the check
//     fails, whatever the changelog says, and -update refuses it;
//     -release adds the recorded API to the baseline when the check
//     passes and the files record the library's API exactly, as a
//     release does;
//   - a line the library has and the files do not (an added name) is
//     fine: the check passes and prints it as a notice until -update
//     records it, so a review sees every addition, and -release refuses
//     while one is unrecorded;
//   - a line the files have and the library does not (a name removed, a
//     signature, field type or constant value changed, a method added to
//     an interface) breaks callers: the check fails, and -update refuses
//     to record it, unless the changelog's "## Unreleased" section names
//     it (WithMode, Problem.Body, Layout.SortValue);
//   - the same holds against each module's newest release tag
//     (<module dir>/vX.Y.Z, when the clone has one): every line of that
//     release's API files the library no longer has must be named in
//     "## Unreleased", however the files were edited since.
//
// It prints exactly which lines changed and what to do, and exits 1 when
// the check fails or a release is refused, 2 when it could not run.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	cfg := config{}
	fs := flag.NewFlagSet("apicheck", flag.ExitOnError)
	fs.StringVar(&cfg.root, "root", ".", "the repository's root")
	fs.StringVar(&cfg.lib, "lib", "pkg", "the directory, under root, whose modules are the library")
	fs.StringVar(&cfg.apiDir, "api", "pkg/api", "the directory, under root, of the API files")
	fs.StringVar(&cfg.baseline, "baseline", "pkg/api/v1", "the directory, under root, of the API the major version has released")
	fs.StringVar(&cfg.changelog, "changelog", "pkg/CHANGELOG.md", "the library's changelog, under root")
	fs.BoolVar(&cfg.update, "update", false, "rewrite the API files, unless a breaking change is not named in the changelog or breaks the released API")
	fs.BoolVar(&cfg.release, "release", false, "add the recorded API to the baseline, as a release does, when the check passes")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "apicheck: unexpected arguments", fs.Args())
		os.Exit(2)
	}
	os.Exit(check(cfg, os.Stdout))
}
