package toollist

import (
	"hash/crc32"
	"net/http"
	"testing"
)

// TestCRCCombine: the CRC of a head spliced before a compressed suffix is
// that of the bytes joined, for lengths across the shift's bits.
func TestCRCCombine(t *testing.T) {
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	for _, cut := range []int{0, 1, 7, 8, 255, 4096, 65_535, 65_536, 199_999, 200_000} {
		a, b := data[:cut], data[cut:]
		got := crcMulMod(crcShift(uint64(len(b))), crc32.ChecksumIEEE(a)) ^ crc32.ChecksumIEEE(b)
		if want := crc32.ChecksumIEEE(data); got != want {
			t.Errorf("cut at %d: combined %08x, want %08x", cut, got, want)
		}
	}
}

// TestAcceptsGzip reads Accept-Encoding as RFC 9110 does.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"br", "gzip;q=0.1"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip ; q=0.0"}, false},
		{[]string{"gzip;q=bad"}, false},
		{[]string{"identity"}, false},
		{[]string{"br, deflate"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false},
		{[]string{"x-gzip"}, true},
		{[]string{"gzipped"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Accept-Encoding", v)
		}
		if got := acceptsGzip(h); got != tc.want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tc.values, got, tc.want)
		}
	}
}
