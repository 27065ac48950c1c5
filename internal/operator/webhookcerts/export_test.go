package webhookcerts

// StateFromData lets the external tests read a Secret the way the
// Rotator does.
var StateFromData = stateFromData
