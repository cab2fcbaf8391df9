// Command groups prints, for each bench result file, the shared prefix group
// of every request (regenerated from the file's workload configuration, which
// alone decides it) as tab-separated lines: file, session, turn, group.
// bench/scripts/analysis/ladder_groups.py reads them.
//
// Usage: go run ./bench/scripts/analysis/groups RESULT.json[.gz]...
package main

import (
	"fmt"
	"os"

	"github.com/inferrail/inferrail/bench"
)

func main() {
	for _, path := range os.Args[1:] {
		r, err := bench.ReadResult(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sessions, err := bench.Generate(r.Workload)
		if err != nil {
			fmt.Fprintln(os.Stderr, path+":", err)
			os.Exit(1)
		}
		for _, rec := range r.Records {
			if rec.Session < 0 || rec.Session >= len(sessions) {
				fmt.Fprintf(os.Stderr, "%s: session %d not in the workload\n", path, rec.Session)
				os.Exit(1)
			}
			fmt.Printf("%s\t%d\t%d\t%d\n", path, rec.Session, rec.Turn, sessions[rec.Session].Group)
		}
	}
}
