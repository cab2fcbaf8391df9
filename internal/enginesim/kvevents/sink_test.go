package kvevents_test

import (
	"github.com/inferrail/inferrail/internal/enginesim"
	"github.com/inferrail/inferrail/internal/enginesim/kvevents"
)

// Publisher is the simulator's KVEventSink. The check lives in an external
// test package because enginesim imports kvevents.
var _ enginesim.KVEventSink = (*kvevents.Publisher)(nil)
