// Package meta holds the API vocabulary that every Anvil kind shares: the
// condition types and reasons that mean the same thing whichever kind reports
// them, and the status fields every kind carries. Kind-specific condition
// types and reasons live next to their kind.
//
// +kubebuilder:object:generate=true
package meta
