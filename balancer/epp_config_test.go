package balancer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEPPConfig decodes the epp section over its defaults (off, data
// endpoints, two fallbacks, full duplex) and reports every bad value with its
// path.
func TestEPPConfig(t *testing.T) {
	if d := DefaultConfig().EPP; d != (EPPConfig{Endpoint: EPPEndpointData, Fallbacks: 2, BodyMode: EPPBodyFullDuplex}) {
		t.Errorf("defaults %+v", d)
	}
	good, err := loadAndValidate("testdata/good-epp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(EPPConfig{Listen: ":9002", Endpoint: EPPEndpointEngine, Fallbacks: 1, BodyMode: EPPBodyBuffered}, good.EPP); diff != "" {
		t.Errorf("good-epp.yaml (-want +got):\n%s", diff)
	}
	_, err = loadAndValidate("testdata/bad-epp.yaml")
	if err == nil {
		t.Fatal("bad-epp.yaml accepted")
	}
	for _, want := range []string{
		`epp.listen must differ from listen, got "127.0.0.1:8080" for both`,
		`epp.endpoint must be data or engine, got "pod"`,
		`epp.fallbacks must be in [0, 16], got -1`,
		`epp.body_mode must be full_duplex_streamed or buffered, got "streamed"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := DecodeConfig([]byte("epp:\n  listn: :9002\n"), DefaultConfig()); err == nil || !strings.Contains(err.Error(), "listn") {
		t.Errorf("unknown key: %v", err)
	}
}
