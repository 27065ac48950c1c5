package webhookcerts

import "crypto/x509"

// StateFromData lets the external tests read a Secret the way the
// Rotator does.
var StateFromData = stateFromData

// SetServes replaces what the Rotator knows of the certificate its
// replica serves.
func (r *Rotator) SetServes(f func(*x509.Certificate) bool) { r.serves = f }
