// Package webhook holds Anvil's admission webhooks: the rules that CEL in the
// CRD schema cannot express, such as parsing a URL. Every rejection names the
// field it is about.
package webhook
