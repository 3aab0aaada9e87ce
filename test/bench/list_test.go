package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStaticHandler: the static server sends the identity bytes unless the
// client accepts gzip and it has them compressed, always with
// Content-Length.
func TestStaticHandler(t *testing.T) {
	body, gz := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), []byte("\x1f\x8bcompressed")
	for _, c := range []struct {
		name     string
		gz       []byte
		accept   string
		want     []byte
		encoding string
	}{
		{"identity, no gzip kept", nil, "gzip", body, ""},
		{"client accepts none", gz, "", body, ""},
		{"client accepts gzip", gz, "gzip, deflate", gz, "gzip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(listRequest)))
			if c.accept != "" {
				req.Header.Set("Accept-Encoding", c.accept)
			}
			rec := httptest.NewRecorder()
			staticHandler(body, c.gz, "application/json").ServeHTTP(rec, req)
			got, _ := io.ReadAll(rec.Body)
			h := rec.Header()
			if string(got) != string(c.want) || h.Get("Content-Encoding") != c.encoding ||
				h.Get("Content-Length") != strconv.Itoa(len(c.want)) || h.Get("Content-Type") != "application/json" {
				t.Errorf("got %q with %v", got, h)
			}
		})
	}
}

// TestWireListEncodings: the reply fetched from a server that compresses
// (here the static handler itself) keeps both forms, and one list of it
// reads the same bytes in either encoding, through the client of each; a
// server that does not compress leaves the gzip form out.
func TestWireListEncodings(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	for _, c := range []struct {
		name string
		gz   []byte
	}{{"server compresses", buf.Bytes()}, {"server does not compress", nil}} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(staticHandler(body, c.gz, "application/json"))
			defer srv.Close()
			raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			ctx := context.Background()
			reply, err := fetchReply(ctx, raw, srv.URL, http.Header{}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(reply.body, body) || !bytes.Equal(reply.gzip, c.gz) || reply.contentType != "application/json" {
				t.Fatalf("reply %+v", reply)
			}
			if _, err := fetchReply(ctx, raw, srv.URL, http.Header{}, 3); err == nil {
				t.Error("a reply with 2 tools passed for 3")
			}
			for _, hc := range []*http.Client{raw, srv.Client()} {
				_, pages, size, d, err := wireList(hc, srv.URL, http.Header{}, len(body))(ctx)
				if err != nil || pages != 1 || size != len(body) || d <= 0 {
					t.Errorf("wireList: %d pages, %d bytes in %v, %v", pages, size, d, err)
				}
			}
			if _, _, _, _, err := wireList(raw, srv.URL, http.Header{}, len(body)+1)(ctx); err == nil {
				t.Error("a reply of the wrong size passed")
			}
		})
	}
}

// checkListIssue34 checks issue 34's figures of a benchmark 3 run: every
// pair request by request in every round, and the hub's memory at every
// checkpoint, before its first list included.
func checkListIssue34(t *testing.T, l *ListBench, rounds int) {
	t.Helper()
	il := l.Interleaved
	if il == nil || il.Requests != listInterleavedRequests {
		t.Fatalf("request by request: %+v", il)
	}
	want := []string{"identity", "gzip-accepting client, static identity"}
	if l.HubGzip {
		want = append(want, "gzip")
	}
	var got []string
	for _, p := range il.Pairs {
		got = append(got, p.Name)
		if len(p.RoundRatios) != rounds || p.HubP50Ms <= 0 || p.StaticP50Ms <= 0 || p.P50Ratio <= 0 {
			t.Errorf("request by request, %s: %+v", p.Name, p)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
	if mixed := il.pair(want[1]); mixed != nil && (mixed.HubEncoding == "gzip") != l.HubGzip {
		t.Errorf("the gzip-accepting client got %s from the hub, which compresses: %v", mixed.HubEncoding, l.HubGzip)
	}
	if !strings.Contains(il.explain(1), "request by request") {
		t.Errorf("explanation %q", il.explain(1))
	}
	m := l.Memory
	// The full list, but for the digits of the request id.
	if m == nil || max(m.ListBytes-l.Full.Bytes, l.Full.Bytes-m.ListBytes) > 8 || m.Before.RSSKB <= 0 || m.Before.HeapInuseKB <= 0 {
		t.Fatalf("memory: %+v (the full list: %d bytes)", m, l.Full.Bytes)
	}
	var lists []int
	for _, p := range m.After {
		lists = append(lists, p.Lists)
		if p.Mem.RSSKB <= 0 || p.Mem.HeapInuseKB <= 0 ||
			p.HeapGrowth != float64(p.Mem.HeapInuseKB-m.Before.HeapInuseKB)*1024/float64(m.ListBytes) {
			t.Errorf("memory after %d lists: %+v", p.Lists, p)
		}
	}
	if !slices.Equal(lists, listMemoryCheckpoints()) {
		t.Errorf("memory read after %v lists, want %v", lists, listMemoryCheckpoints())
	}
}

// TestListBenchHarness runs benchmark 3 alone on a small catalog, as a
// correctness check of its parts (TestBenchHarness runs every benchmark):
// no timing or memory figure is asserted.
func TestListBenchHarness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Rounds: minRounds,
		Only: []int{3}, ScaleUpstreams: 5, ScaleTools: 10})
	if err != nil {
		t.Fatal(err)
	}
	l := rep.ToolsList
	if l == nil {
		t.Fatal("no tools/list benchmark")
	}
	checkListIssue34(t, l, minRounds)
	var table strings.Builder
	l.writeTable(&table)
	for _, s := range []string{"request by request", "growth in list sizes", "100 "} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
}
