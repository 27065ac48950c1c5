package podrunner

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// vkLogger feeds virtual-kubelet's log into the runner's logr.Logger.
// virtual-kubelet reports routine progress at info level ("Created pod in
// provider"), so its info goes to V(1) and its debug to V(2); warnings stay
// visible at V(0).
type vkLogger struct {
	log logr.Logger
	// err is the error attached with WithError; it becomes the error of an
	// Error call and a value of any other.
	err error
}

var _ vklog.Logger = vkLogger{}

// errValue returns the attached error as a key and value for lines that
// are not errors.
func (l vkLogger) errValue() []any {
	if l.err == nil {
		return nil
	}
	return []any{"error", l.err.Error()}
}

// newVKLogger adapts l.
func newVKLogger(l logr.Logger) vklog.Logger { return vkLogger{log: l} }

// Debug implements vklog.Logger.
func (l vkLogger) Debug(args ...any) { l.log.V(2).Info(fmt.Sprint(args...), l.errValue()...) }

// Debugf implements vklog.Logger.
func (l vkLogger) Debugf(f string, args ...any) {
	l.log.V(2).Info(fmt.Sprintf(f, args...), l.errValue()...)
}

// Info implements vklog.Logger.
func (l vkLogger) Info(args ...any) { l.log.V(1).Info(fmt.Sprint(args...), l.errValue()...) }

// Infof implements vklog.Logger.
func (l vkLogger) Infof(f string, args ...any) {
	l.log.V(1).Info(fmt.Sprintf(f, args...), l.errValue()...)
}

// Warn implements vklog.Logger.
func (l vkLogger) Warn(args ...any) {
	l.log.Info(fmt.Sprint(args...), append([]any{"warning", true}, l.errValue()...)...)
}

// Warnf implements vklog.Logger.
func (l vkLogger) Warnf(f string, args ...any) {
	l.log.Info(fmt.Sprintf(f, args...), append([]any{"warning", true}, l.errValue()...)...)
}

// Error implements vklog.Logger.
func (l vkLogger) Error(args ...any) { l.log.Error(l.err, fmt.Sprint(args...)) }

// Errorf implements vklog.Logger.
func (l vkLogger) Errorf(f string, args ...any) { l.log.Error(l.err, fmt.Sprintf(f, args...)) }

// Fatal implements vklog.Logger. virtual-kubelet's contract, taken from
// logrus, is that Fatal exits.
func (l vkLogger) Fatal(args ...any) {
	l.log.Error(l.err, fmt.Sprint(args...))
	os.Exit(1)
}

// Fatalf implements vklog.Logger.
func (l vkLogger) Fatalf(f string, args ...any) {
	l.log.Error(l.err, fmt.Sprintf(f, args...))
	os.Exit(1)
}

// WithField implements vklog.Logger.
func (l vkLogger) WithField(k string, v any) vklog.Logger {
	return vkLogger{log: l.log.WithValues(k, v), err: l.err}
}

// WithFields implements vklog.Logger, in key order so that the output is
// stable.
func (l vkLogger) WithFields(fields vklog.Fields) vklog.Logger {
	keys := slices.Sorted(maps.Keys(fields))
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, fields[k])
	}
	return vkLogger{log: l.log.WithValues(kv...), err: l.err}
}

// WithError implements vklog.Logger. Info and debug lines show the error
// as a value; Error lines pass it as logr's error.
func (l vkLogger) WithError(err error) vklog.Logger {
	if err == nil {
		return l
	}
	return vkLogger{log: l.log, err: err}
}
