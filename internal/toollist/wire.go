package toollist

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
)

// How a cached tools/list goes on the wire. A list of a large catalog is
// megabytes that are the same for every caller of a view; only the
// JSON-RPC envelope around them (the request's id) differs. So the answer
// is written as two parts: a head made for the request, and the view's
// bytes, kept with the answer's end after them, as the cache holds them
// (never copied), with Content-Length set. A client that accepts gzip gets
// the view compressed once, and the request's head spliced in front of it
// inside ONE gzip member: browsers (Chromium and the others) ignore every
// member after the first, so a stream of several members, though RFC 1952
// allows it, would lose the list there. The head goes in as a stored
// (uncompressed) deflate block, the view's compressed blocks follow, and
// the member's CRC-32 is that of head and view combined from their own, so
// no request reads the view's bytes again.

// listGzipLevel trades compression time, paid once per view and catalog
// generation on the first gzip request, against the bytes of every gzip
// answer. On a 5 MB list (BenchmarkListGzipLevels) level 2 compresses as
// fast as level 1 (~9 ms) to 4.9% of the bytes rather than 7.2%; level 6
// takes twice as long for 4.5%. klauspost/compress's levels 1-4 took as
// long for 6.7-7.1%, so the standard library's flate, already in the
// binary for net/http, does the job.
const listGzipLevel = 2

// gzipSuffix is the end of a list answer (the view and the tail), gzip
// compressed once, to be sent after any head.
type gzipSuffix struct {
	deflate []byte // the suffix's deflate stream, whose last block is final
	crc     uint32 // CRC-32 (IEEE) of the uncompressed suffix
	size    uint64 // uncompressed length
	shift   uint32 // x^(8*size) mod the CRC polynomial: what carries a head's CRC past the suffix
}

// compressSuffix compresses the concatenation of parts.
func compressSuffix(parts ...[]byte) (*gzipSuffix, error) {
	var buf bytes.Buffer
	zw, err := flate.NewWriter(&buf, listGzipLevel)
	if err != nil {
		return nil, fmt.Errorf("start compressing a tools/list: %w", err)
	}
	s := &gzipSuffix{}
	for _, p := range parts {
		_, _ = zw.Write(p) // a bytes.Buffer takes everything
		s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
		s.size += uint64(len(p))
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress a tools/list: %w", err)
	}
	s.deflate, s.shift = buf.Bytes(), crcShift(s.size)
	return s, nil
}

// gzip framing (RFC 1952 section 2.3, RFC 1951 section 3.2.4).
const (
	gzipHeaderLen   = 10 // magic, method deflate, no flags, no mtime, extra flags, OS
	storedHeaderLen = 5  // BFINAL/BTYPE byte, LEN, NLEN
	maxStoredBlock  = 0xffff
	gzipTrailerLen  = 8 // CRC-32, ISIZE
)

// frame returns the bytes that go before and after s.deflate to make one
// gzip member of head followed by the suffix: the gzip header and head in
// stored blocks that are not final, then the member's CRC-32 and size.
func (s *gzipSuffix) frame(head []byte) (pre, post []byte) {
	blocks := (len(head) + maxStoredBlock - 1) / maxStoredBlock
	n := gzipHeaderLen + blocks*storedHeaderLen + len(head)
	buf := make([]byte, n, n+gzipTrailerLen)
	copy(buf, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	at := gzipHeaderLen
	for rest := head; len(rest) > 0; {
		k := min(len(rest), maxStoredBlock)
		buf[at] = 0 // BFINAL 0, BTYPE 00 (stored), padded to the byte
		binary.LittleEndian.PutUint16(buf[at+1:], uint16(k))
		binary.LittleEndian.PutUint16(buf[at+3:], ^uint16(k))
		at += storedHeaderLen + copy(buf[at+storedHeaderLen:], rest[:k])
		rest = rest[k:]
	}
	crc := crcMulMod(s.shift, crc32.ChecksumIEEE(head)) ^ s.crc
	post = binary.LittleEndian.AppendUint32(buf[n:n], crc)
	post = binary.LittleEndian.AppendUint32(post, uint32(s.size+uint64(len(head)))) // ISIZE is the length mod 2^32
	return buf[:n], post
}

// CRC-32 of two strings joined, from the CRC of each (zlib's
// crc32_combine): crc(a‖b) = crc(a)·x^(8·len(b)) mod P ⊕ crc(b), in the
// reflected bit order of hash/crc32. Neither the standard library nor a
// module of the hub's graph offers it.

// crcMulMod is a(x)·b(x) modulo the CRC-32 polynomial.
func crcMulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// crcShift is x^(8n) modulo the CRC-32 polynomial, by squaring.
func crcShift(n uint64) uint32 {
	p, sq := uint32(1)<<31, uint32(1)<<23 // x^0, x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			p = crcMulMod(sq, p)
		}
		sq = crcMulMod(sq, sq)
	}
	return p
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (RFC 9110 section 12.5.3): named (or x-gzip) with a q above 0, or left
// to a "*" with a q above 0.
func acceptsGzip(h http.Header) bool {
	gzip, star := -1, -1 // -1 not named, 0 refused, 1 accepted
	for _, line := range h.Values("Accept-Encoding") {
		for item := range strings.SplitSeq(line, ",") {
			coding, params, _ := strings.Cut(item, ";")
			ok := 1
			for p := range strings.SplitSeq(params, ";") {
				if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); strings.EqualFold(k, "q") {
					if q, err := strconv.ParseFloat(v, 64); err != nil || q <= 0 {
						ok = 0
					}
				}
			}
			switch c := strings.TrimSpace(coding); {
			case strings.EqualFold(c, "gzip") || strings.EqualFold(c, "x-gzip"):
				gzip = max(gzip, ok)
			case c == "*":
				star = max(star, ok)
			}
		}
	}
	if gzip >= 0 {
		return gzip == 1
	}
	return star == 1
}

// writeList answers with head and suffix (the result after its opening
// brace, and the answer's end), or, when kept is the view suffix belongs to
// and the request accepts gzip, with head spliced before kept's gzip
// variant (suffix compressed). What a view holds is shared by every request
// of the view and written as it is. The suffix goes in one write: the
// megabytes of a large list go straight to the connection, and an answer's
// end written apart would be a last syscall, and segment, of its own.
func writeList(w http.ResponseWriter, r *http.Request, head, suffix []byte, kept *listView) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if kept != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header) {
			if gz := kept.gzipped(); gz != nil {
				pre, post := gz.frame(head)
				h.Set("Content-Encoding", "gzip")
				h.Set("Content-Length", strconv.Itoa(len(pre)+len(gz.deflate)+len(post)))
				_, _ = w.Write(pre)
				_, _ = w.Write(gz.deflate)
				_, _ = w.Write(post)
				return
			}
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(head)+len(suffix)))
	_, _ = w.Write(head)
	_, _ = w.Write(suffix)
}
