package inferproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fetch GETs url with c, reads the whole body, and returns how long it
// took and how many bytes came.
func fetch(b *testing.B, c *http.Client, url string) (time.Duration, int64) {
	t0 := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return time.Since(t0), n
}

func directClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, Proxy: nil}}
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAddedLatency sends small requests alternately straight to the
// upstream (TCP) and through inferproxy (Unix socket, then TCP), so both
// see the same machine load, and reports the median of each and the
// difference: what inferproxy adds to a request. ns/op covers both.
func BenchmarkAddedLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	defer up.Close()
	p := startProxy(b, up.URL, DefaultMaxRequestBytes, time.Second)
	direct := directClient()
	defer direct.CloseIdleConnections()
	for range 100 { // warm both paths' connections
		fetch(b, direct, up.URL+"/health")
		fetch(b, p.client, "http://infer/health")
	}
	viaDirect := make([]time.Duration, 0, b.N)
	viaProxy := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		d, _ := fetch(b, direct, up.URL+"/health")
		viaDirect = append(viaDirect, d)
		d, _ = fetch(b, p.client, "http://infer/health")
		viaProxy = append(viaProxy, d)
	}
	b.StopTimer()
	pd, pp := p50(viaDirect), p50(viaProxy)
	b.ReportMetric(float64(pd.Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(pp.Nanoseconds()), "proxy-p50-ns")
	b.ReportMetric(float64((pp - pd).Nanoseconds()), "added-p50-ns")
}

// BenchmarkStreamThroughput streams a 50 MB server-sent-event response,
// alternately straight from the upstream and through inferproxy, and
// reports both rates and their ratio.
func BenchmarkStreamThroughput(b *testing.B) {
	const total, eventSize = 50 << 20, 16 << 10
	event := []byte("data: " + strings.Repeat("x", eventSize-8) + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for n := 0; n < total; n += len(event) {
			if _, err := w.Write(event); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}))
	defer up.Close()
	p := startProxy(b, up.URL, DefaultMaxRequestBytes, time.Second)
	direct := directClient()
	defer direct.CloseIdleConnections()
	var tDirect, tProxy, cDirect, cProxy time.Duration
	var bytes int64
	b.ResetTimer()
	for range b.N {
		c0 := cpuTime(b)
		d, n := fetch(b, direct, up.URL+"/v1/models")
		c1 := cpuTime(b)
		tDirect, cDirect, bytes = tDirect+d, cDirect+c1-c0, bytes+n
		d, m := fetch(b, p.client, "http://infer/v1/models")
		tProxy, cProxy = tProxy+d, cProxy+cpuTime(b)-c1
		if m != n {
			b.Fatalf("%d bytes through the proxy, %d direct", m, n)
		}
	}
	b.StopTimer()
	mb := float64(bytes) / 1e6
	b.ReportMetric(mb/tDirect.Seconds(), "direct-MB/s")
	b.ReportMetric(mb/tProxy.Seconds(), "proxy-MB/s")
	b.ReportMetric(tDirect.Seconds()/tProxy.Seconds(), "proxy/direct")
	// CPU time of this whole process (upstream, client and, on the second
	// path, the proxy) per MB: unlike the rates, this does not depend on
	// how busy the rest of the machine is.
	b.ReportMetric(float64(cDirect.Microseconds())/mb, "direct-cpu-µs/MB")
	b.ReportMetric(float64(cProxy.Microseconds())/mb, "proxy-cpu-µs/MB")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
