package childwriter

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// settledObject is Settled for a live object as a typed read returns it.
func settledObject(desired map[string]any, live client.Object) (bool, error) {
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	// A typed read leaves the type empty; it is not a difference.
	liveMap["apiVersion"], liveMap["kind"] = desired["apiVersion"], desired["kind"]
	return Settled(desired, liveMap, live.GetManagedFields()), nil
}

// Settled tells whether applying desired would change nothing: live holds
// every value desired sets (the apiserver's defaults may add more), and
// the fields FieldOwner's last apply owns, read from live's managedFields,
// are all still in desired. A live object FieldOwner never applied is not
// settled, so the first pass takes ownership. It is pure.
func Settled(desired, live map[string]any, managed []metav1.ManagedFieldsEntry) bool {
	if !subset(desired, live) {
		return false
	}
	for _, e := range managed {
		if e.Manager != FieldOwner || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		if e.FieldsV1 == nil {
			return false
		}
		var owned map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &owned); err != nil {
			return false
		}
		return covers(owned, desired)
	}
	return false
}

// subset tells whether every value in want is in have. Lists match element
// by element, and an empty map or list in want matches an absent one.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, _ := have.(map[string]any)
		for k, v := range w {
			hv, ok := h[k]
			if !ok {
				if isEmpty(v) {
					continue
				}
				return false
			}
			if !subset(v, hv) {
				return false
			}
		}
		return true
	case []any:
		h, _ := have.([]any)
		if len(w) != len(h) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, have)
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// covers tells whether every field of a managedFields set (the fieldsV1
// format: "f:" names a field, "k:" a list element by its keys, "v:" a set
// element by value, "i:" an index, "." the element itself) is present in
// the object v.
func covers(fields map[string]any, v any) bool {
	for key, sub := range fields {
		if key == "." {
			continue
		}
		child, ok := lookup(key, v)
		if !ok {
			return false
		}
		if m, isMap := sub.(map[string]any); isMap && len(m) > 0 && !covers(m, child) {
			return false
		}
	}
	return true
}

// lookup finds the part of v one fieldsV1 key names.
func lookup(key string, v any) (any, bool) {
	kind, rest, found := strings.Cut(key, ":")
	if !found {
		return nil, false
	}
	switch kind {
	case "f":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		x, ok := m[rest]
		return x, ok
	case "k":
		var keys map[string]any
		if json.Unmarshal([]byte(rest), &keys) != nil {
			return nil, false
		}
		list, _ := v.([]any)
		for _, el := range list {
			if m, ok := el.(map[string]any); ok && matchesKeys(m, keys) {
				return el, true
			}
		}
	case "v":
		list, _ := v.([]any)
		for _, el := range list {
			if sameJSON(el, rest) {
				return el, true
			}
		}
	case "i":
		list, _ := v.([]any)
		var i int
		if _, err := fmt.Sscanf(rest, "%d", &i); err == nil && i >= 0 && i < len(list) {
			return list[i], true
		}
	}
	return nil, false
}

// matchesKeys tells whether a list element carries the key values.
func matchesKeys(el, keys map[string]any) bool {
	for k, want := range keys {
		raw, err := json.Marshal(want)
		if err != nil || !sameJSON(el[k], string(raw)) {
			return false
		}
	}
	return true
}

// sameJSON compares a value with a JSON text by their JSON forms, so that
// an int64 and the float64 JSON decodes to compare equal.
func sameJSON(v any, text string) bool {
	var decoded any
	if json.Unmarshal([]byte(text), &decoded) != nil {
		return false
	}
	a, errA := json.Marshal(v)
	b, errB := json.Marshal(decoded)
	return errA == nil && errB == nil && string(a) == string(b)
}
