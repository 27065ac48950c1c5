package flow

import (
	"errors"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b Outcome
		want Outcome
	}{
		{name: "both continue", a: Continue, b: Continue, want: Continue},
		{name: "earliest requeue wins", a: Wait(10 * time.Second), b: Wait(time.Second), want: Wait(time.Second)},
		{name: "a requeue survives a continue", a: Continue, b: Wait(time.Second), want: Wait(time.Second)},
		{name: "halt is sticky", a: Halt, b: Wait(time.Second), want: WaitAndHalt(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Merge(tt.a, tt.b); got != tt.want {
				t.Errorf("Merge = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResult(t *testing.T) {
	res, err := Result(Wait(5*time.Second), nil)
	if err != nil || res.RequeueAfter != 5*time.Second {
		t.Errorf("wait: %+v, %v", res, err)
	}
	boom := errors.New("boom")
	if _, err := Result(Continue, boom); !errors.Is(err, boom) {
		t.Errorf("error: %v", err)
	}
	_, err = Result(Continue, Invalid(boom))
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("invalid: %v", err)
	}
	var invalid *InvalidInputError
	if !errors.As(err, &invalid) {
		t.Error("invalid input lost its type")
	}
}
