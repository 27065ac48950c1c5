package controlplane_test

import (
	"strings"

	"k8s.io/client-go/tools/events"
)

// recorder captures events for assertions.
type recorder struct {
	*events.FakeRecorder
}

func newRecorder() *recorder { return &recorder{events.NewFakeRecorder(20)} }

// reasons drains the recorded events and returns "<type> <reason>" each.
func (r *recorder) reasons() []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			f := strings.Fields(e)
			if len(f) >= 2 {
				out = append(out, f[0]+" "+f[1])
			}
		default:
			return out
		}
	}
}
