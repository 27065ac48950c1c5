package placement

import (
	"errors"
	"testing"
	"time"
)

func TestDecideResolve(t *testing.T) {
	cases := []struct {
		name                                     string
		resolved, remote, hasFinalizer, deleting bool
		want                                     Action
	}{
		{name: "a cluster that cannot be used waits", want: Wait},
		{name: "a cluster that cannot be used waits, finalizer or not", hasFinalizer: true, want: Wait},
		{name: "local children proceed without a finalizer", resolved: true, want: Proceed},
		{name: "a placed object is held before its first remote write", resolved: true, remote: true, want: AddFinalizer},
		{name: "a held placed object proceeds", resolved: true, remote: true, hasFinalizer: true, want: Proceed},
		{name: "a finalizer left from a placed past does not block local children", resolved: true, hasFinalizer: true, want: Proceed},
		{name: "a deleting placed object is never held anew", resolved: true, remote: true, deleting: true, want: Proceed},
		{name: "a deleting object waits for its cluster too", deleting: true, want: Wait},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DecideResolve(c.resolved, c.remote, c.hasFinalizer, c.deleting); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecideRelease(t *testing.T) {
	cases := []struct {
		name string
		res  TeardownResult
		want Action
	}{
		{name: "swept", res: TeardownResult{Release: true}, want: RemoveFinalizer},
		{name: "given up after the abandon window", res: TeardownResult{Release: true}, want: RemoveFinalizer},
		{name: "the cluster cannot be used yet", res: TeardownResult{RequeueAfter: time.Minute, Unavailable: errors.New("gone")}, want: Wait},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DecideRelease(c.res); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}
