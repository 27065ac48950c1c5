// Command hello stands in for the operator in ociimage's tests: it compiles
// in seconds for any platform.
package main

import "os"

func main() {
	_, _ = os.Stdout.WriteString("hello from the image\n")
}
