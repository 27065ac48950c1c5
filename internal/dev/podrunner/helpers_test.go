package podrunner

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// testShellImage is the image the tests map to a local shell.
const testShellImage = "example.invalid/sh"

// shellMapping runs containers of testShellImage as /bin/sh -c with their
// args joined into a script, mount paths translated. It shows how a caller
// extends the ImageMap.
func shellMapping() Mapping {
	return Mapping{
		Name:  "test-shell",
		Match: MatchImage(testShellImage),
		Build: func(c Container) (Command, error) {
			args := ExpandArgs(&corev1.Container{Args: c.Spec.Args}, c.Env)
			return Command{Path: "/bin/sh", Args: []string{"-c", c.Mounts.Translate(strings.Join(args, " "))}}, nil
		},
	}
}

// testImages puts the shell mapping in front of the built-in ones.
func testImages() ImageMap {
	return append(ImageMap{shellMapping()}, DefaultImageMap()...)
}

// pidOf extracts the PID from a process container ID.
func pidOf(containerID string) int {
	pid, err := strconv.Atoi(strings.TrimPrefix(containerID, "process://"))
	if err != nil || !strings.HasPrefix(containerID, "process://") {
		return 0
	}
	return pid
}
