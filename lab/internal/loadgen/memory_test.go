package loadgen

import "testing"

func TestMemorySetBytes(t *testing.T) {
	var m Memory
	steps := []int64{0, 1, 3*chunkBytes + 5, 3 * chunkBytes, chunkBytes / 2, 2*chunkBytes + 1, 0, -1}
	for _, n := range steps {
		m.SetBytes(n)
		want := max(n, 0)
		if got := m.Bytes(); got != want {
			t.Fatalf("after SetBytes(%d): Bytes() = %d, want %d", n, got, want)
		}
		var sum int64
		for _, c := range m.chunks {
			if len(c) > chunkBytes || len(c) == 0 || c[0] != 1 {
				t.Fatalf("after SetBytes(%d): chunk of %d bytes, first byte %d", n, len(c), c[0])
			}
			sum += int64(len(c))
		}
		if sum != want {
			t.Fatalf("after SetBytes(%d): chunks hold %d bytes", n, sum)
		}
	}
}
