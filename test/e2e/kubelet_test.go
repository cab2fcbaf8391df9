package e2e

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// k8sCluster runs pods of rendered Kubernetes objects as local processes of
// the real binary, the way a kubelet would run them on one node: every pod
// gets its own loopback address as its pod IP (its containers share it, as
// they share a network namespace), volumes are files written from the
// ConfigMaps and Secrets of the cluster, the downward API fills the
// environment and $(VAR) references in args are expanded. Service DNS names
// resolve through dns. The command lines and files are the ones the chart
// and `inferrail inject` produced; only addresses and paths are mapped.
type k8sCluster struct {
	t          *testing.T
	bin        string
	subnet     string // "127.a.b."
	next       int
	configMaps map[string]map[string]string
	secrets    map[string]map[string][]byte
	dns        map[string]string
}

func newK8sCluster(t *testing.T, bin string) *k8sCluster {
	return &k8sCluster{t: t, bin: bin, subnet: fmt.Sprintf("127.%d.%d.", 1+rand.IntN(250), 1+rand.IntN(250)), next: 10,
		configMaps: map[string]map[string]string{}, secrets: map[string]map[string][]byte{}, dns: map[string]string{}}
}

// k8sPod is a running pod.
type k8sPod struct {
	name, ip string
	spec     corev1.PodSpec
	procs    map[string]*scProc
}

// allocIP returns the next pod IP.
func (c *k8sCluster) allocIP() string {
	c.next++
	return fmt.Sprintf("%s%d", c.subnet, c.next)
}

// runPod starts every container of spec. engine, if not nil, turns the
// engine container's argv into the simulator's.
func (c *k8sCluster) runPod(name, ip string, spec corev1.PodSpec, engine func(ctr *corev1.Container, ip string) []string) *k8sPod {
	t := c.t
	t.Helper()
	p := &k8sPod{name: name, ip: ip, spec: spec, procs: map[string]*scProc{}}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	for _, ctr := range spec.Containers {
		root := t.TempDir()
		mounts := map[string]string{} // mountPath → host path
		type file struct{ path, data string }
		var files []file
		for _, m := range ctr.VolumeMounts {
			v, ok := vols[m.Name]
			if !ok {
				t.Fatalf("pod %s container %s mounts unknown volume %q", name, ctr.Name, m.Name)
			}
			data := map[string]string{}
			var items []corev1.KeyToPath
			switch {
			case v.ConfigMap != nil:
				cm, ok := c.configMaps[v.ConfigMap.Name]
				if !ok {
					t.Fatalf("pod %s: ConfigMap %q does not exist", name, v.ConfigMap.Name)
				}
				data, items = cm, v.ConfigMap.Items
			case v.Secret != nil:
				s, ok := c.secrets[v.Secret.SecretName]
				if !ok {
					t.Fatalf("pod %s: Secret %q does not exist", name, v.Secret.SecretName)
				}
				for k, b := range s {
					data[k] = string(b)
				}
				items = v.Secret.Items
			case v.EmptyDir != nil:
			default:
				t.Fatalf("pod %s: volume %q of a kind this test cannot provide", name, v.Name)
			}
			dir := filepath.Join(root, v.Name)
			if len(items) == 0 {
				for k := range data {
					items = append(items, corev1.KeyToPath{Key: k, Path: k})
				}
			}
			for _, it := range items {
				d, ok := data[it.Key]
				if !ok {
					t.Fatalf("pod %s: volume %q has no key %q", name, v.Name, it.Key)
				}
				files = append(files, file{filepath.Join(dir, it.Path), d})
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			mounts[m.MountPath] = filepath.Join(dir, m.SubPath)
		}
		env := map[string]string{}
		for _, e := range ctr.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
				env[e.Name] = map[string]string{"metadata.name": name, "status.podIP": ip, "spec.nodeName": "node-1"}[e.ValueFrom.FieldRef.FieldPath]
			default:
				env[e.Name] = e.Value
			}
		}
		rewrite := func(s string) string {
			paths := slices.Sorted(func(yield func(string) bool) {
				for k := range mounts {
					if !yield(k) {
						return
					}
				}
			})
			for i := len(paths) - 1; i >= 0; i-- { // longest first
				s = strings.ReplaceAll(s, paths[i], mounts[paths[i]])
			}
			for host, addr := range c.dns {
				s = strings.ReplaceAll(s, host, addr)
			}
			s = strings.ReplaceAll(s, "0.0.0.0:", ip+":")
			s = strings.ReplaceAll(s, "127.0.0.1:", ip+":")
			return strings.ReplaceAll(s, "tcp://*:", "tcp://"+ip+":")
		}
		for _, f := range files {
			if err := os.WriteFile(f.path, []byte(rewrite(f.data)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		argv := append(slices.Clone(ctr.Command), ctr.Args...)
		if engine != nil {
			if a := engine(&ctr, ip); a != nil {
				argv = a
			}
		}
		ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
		for i, a := range argv {
			argv[i] = rewrite(ref.ReplaceAllStringFunc(a, func(m string) string {
				if v, ok := env[m[2:len(m)-1]]; ok {
					return v
				}
				return m
			}))
		}
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		p.procs[ctr.Name] = k8sStart(t, c.bin, name+"-"+ctr.Name, environ, argv...)
	}
	return p
}

// ready polls every container's readiness probe (httpGet on the pod IP).
func (p *k8sPod) ready(t *testing.T) {
	t.Helper()
	for _, ctr := range p.spec.Containers {
		pr := ctr.ReadinessProbe
		if pr == nil || pr.HTTPGet == nil {
			continue
		}
		port := pr.HTTPGet.Port.IntValue()
		for _, cp := range ctr.Ports {
			if pr.HTTPGet.Port.StrVal != "" && cp.Name == pr.HTTPGet.Port.StrVal {
				port = int(cp.ContainerPort)
			}
		}
		scheme := strings.ToLower(string(pr.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		url := fmt.Sprintf("%s://%s:%d%s", scheme, p.ip, port, pr.HTTPGet.Path)
		proc := p.procs[ctr.Name]
		// The kubelet does not verify the certificate of an HTTPS probe.
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		scWait(t, p.name+"/"+ctr.Name+" readiness "+url, func() error {
			select {
			case <-proc.done:
				t.Fatalf("%s/%s exited: %v", p.name, ctr.Name, proc.err)
			default:
			}
			resp, err := client.Get(url)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s", resp.Status)
			}
			return nil
		})
	}
}

// k8sStart is scStart with the container's environment added to the test's.
func k8sStart(t *testing.T, bin, name string, env []string, args ...string) *scProc {
	t.Helper()
	return scStartEnv(t, bin, name, env, args...)
}
