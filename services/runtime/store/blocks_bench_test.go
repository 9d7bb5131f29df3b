package store_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
)

// packed is a block's plain form as the store packs it (count, lengths, values).
func packed(parts [][]byte) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(parts)))
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
	}
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// BenchmarkBlockCodecs compares compressors for one block of n consecutive NDBC-shaped
// readings of a station (raw fragments, or measurements JSON), with a dictionary of other
// stations' samples.
//
//	go test -run '^$' -bench BlockCodecs -benchtime 3000x ./services/runtime/store/
func BenchmarkBlockCodecs(b *testing.B) {
	for _, kind := range []string{"raw", "measurements"} {
		b.Run(kind, func(b *testing.B) { benchmarkBlockCodecs(b, kind) })
	}
}

func benchmarkBlockCodecs(b *testing.B, kind string) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := benchdata.Batch(0, 10, 64, start)
	value := func(i int) []byte {
		if kind == "raw" {
			return batch.Observations[i].Raw
		}
		j, _ := json.Marshal(batch.Observations[i].Measurements)
		return j
	}
	var dict []byte
	for s := 1; s < 9; s++ {
		dict = append(dict, value(s*64)...)
	}
	for _, n := range []int{1, 16, 32, 64} {
		var parts [][]byte
		for i := 0; i < n; i++ {
			parts = append(parts, value(i))
		}
		plain := packed(parts)
		sd := s2.MakeDict(dict, nil)
		codecs := []struct {
			name string
			enc  func([]byte) []byte
			dec  func([]byte) []byte
		}{
			{"s2dict", func(p []byte) []byte { return sd.Encode(nil, p) }, func(c []byte) []byte { o, _ := sd.Decode(nil, c); return o }},
			{"s2dict-better", func(p []byte) []byte { return sd.EncodeBetter(nil, p) }, func(c []byte) []byte { o, _ := sd.Decode(nil, c); return o }},
			{"s2dict-best", func(p []byte) []byte { return sd.EncodeBest(nil, p) }, func(c []byte) []byte { o, _ := sd.Decode(nil, c); return o }},
		}
		{
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false))
			dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			codecs = append(codecs, struct {
				name string
				enc  func([]byte) []byte
				dec  func([]byte) []byte
			}{"zstd-fastest-nodict", func(p []byte) []byte { return enc.EncodeAll(p, nil) }, func(c []byte) []byte { o, _ := dec.DecodeAll(c, nil); return o }})
		}
		for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderDictRaw(1, dict), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
			dec, _ := zstd.NewReader(nil, zstd.WithDecoderDictRaw(1, dict), zstd.WithDecoderConcurrency(1))
			codecs = append(codecs, struct {
				name string
				enc  func([]byte) []byte
				dec  func([]byte) []byte
			}{fmt.Sprintf("zstd-%s", lvl), func(p []byte) []byte { return enc.EncodeAll(p, nil) }, func(c []byte) []byte { o, _ := dec.DecodeAll(c, nil); return o }})
		}
		for _, c := range codecs {
			out := c.enc(plain)
			if string(c.dec(out)) != string(plain) {
				b.Fatalf("%s: round trip", c.name)
			}
			b.Run(fmt.Sprintf("%s/n=%d/encode", c.name, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c.enc(plain)
				}
				b.ReportMetric(float64(len(out))/float64(n), "bytes/reading")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/reading")
			})
			b.Run(fmt.Sprintf("%s/n=%d/decode", c.name, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c.dec(out)
				}
			})
		}
	}
}
