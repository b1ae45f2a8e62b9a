package metadata

import "testing"

func TestGroupPartitionIsKafkas(t *testing.T) {
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"hello", 50, 99162322 % 50},  // "hello".hashCode() == 99162322
		{"group", 16, 98629247 % 16},  // "group".hashCode() == 98629247
		{"polygenelubricants", 50, 0}, // hashCode() == Integer.MIN_VALUE; Kafka's abs gives 0
		{"Aa", 7, 2112 % 7},           // "Aa" and "BB" collide in Java
		{"BB", 7, 2112 % 7},
		{"zzzzzzzzzz", 50, 0}, // a negative hash code
		{"😀", 10, 0},          // two UTF-16 code units: 55357*31 + 56832
	} {
		want := c.want
		switch c.group {
		case "zzzzzzzzzz":
			var h int32
			for range 10 {
				h = 31*h + 'z'
			}
			if h >= 0 {
				t.Fatal("the test string's hash is not negative")
			}
			want = -h % c.n
		case "😀":
			want = (55357*31 + 56832) % c.n
		}
		if got := GroupPartition(c.group, c.n); got != want {
			t.Errorf("GroupPartition(%q, %d) = %d, want %d", c.group, c.n, got, want)
		}
	}
	if !IsInternal(ConsumerOffsetsTopic) || IsInternal("events") || IsInternal("__consumer_offset") {
		t.Fatal("IsInternal")
	}
}
