package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/sidecar/engine"
)

func TestLoadStatusReport(t *testing.T) {
	counts := DataPathCounts{InFlight: 5, Prefilling: 2, WaitingPrefillTokens: 900,
		Origins: []OriginCounts{{Origin: "b1", InFlight: 3, Prefilling: 1, PrefillTokens: 400}, {Origin: "b2", InFlight: 2, Prefilling: 1, PrefillTokens: 500}}}
	shares := []load.Share{{Origin: "b1", InFlight: 3, Pending: 1, PrefillTokens: 400}, {Origin: "b2", InFlight: 2, Pending: 1, PrefillTokens: 500}}
	many := DataPathCounts{InFlight: 20}
	for i := range gossip.MaxOrigins + 3 {
		many.Origins = append(many.Origins, OriginCounts{Origin: string(rune('a' + i)), InFlight: 1})
	}
	for _, tc := range []struct {
		name string
		in   LoadStatus
		want load.Report
	}{
		{name: "readable: the engine's numbers and the data path's counts",
			in:   LoadStatus{Readable: true, Engine: engine.Load{Running: 4, Waiting: 3, KVUsage: 0.5}, DataPath: counts},
			want: load.Report{Running: 4, Waiting: 3, KVUsage: 0.5, InFlight: 5, Pending: 2, PrefillTokens: 900, Origins: shares}},
		{name: "unreadable: the data path stands in, the KV usage is the last known",
			in:   LoadStatus{Engine: engine.Load{Running: 40, Waiting: 30, KVUsage: 0.75}, DataPath: counts},
			want: load.Report{Running: 3, Waiting: 2, KVUsage: 0.75, InFlight: 5, Pending: 2, PrefillTokens: 900, Origins: shares}},
		{name: "the KV usage corrected by what the data path saw since the scrape",
			in: LoadStatus{Readable: true, Engine: engine.Load{KVUsage: 0.5}, UnscrapedKVTokens: 1024, KVCapacityTokens: 4096,
				DataPath: counts},
			want: load.Report{KVUsage: 0.75, InFlight: 5, Pending: 2, PrefillTokens: 900, Origins: shares}},
		{name: "a correction is kept within [0, 1]",
			in:   LoadStatus{Readable: true, Engine: engine.Load{KVUsage: 0.1}, UnscrapedKVTokens: -1024, KVCapacityTokens: 4096},
			want: load.Report{}},
		{name: "no correction without a known capacity",
			in:   LoadStatus{Readable: true, Engine: engine.Load{KVUsage: 0.5}, UnscrapedKVTokens: 1024},
			want: load.Report{KVUsage: 0.5}},
		{name: "nothing yet",
			want: load.Report{}},
		{name: "at most gossip.MaxOrigins origins",
			in: LoadStatus{Readable: true, DataPath: many},
			want: func() load.Report {
				r := load.Report{InFlight: 20}
				for _, o := range many.Origins[:gossip.MaxOrigins] {
					r.Origins = append(r.Origins, load.Share{Origin: o.Origin, InFlight: 1})
				}
				return r
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.Report()); diff != "" {
				t.Errorf("Report() (-want +got):\n%s", diff)
			}
		})
	}
}
