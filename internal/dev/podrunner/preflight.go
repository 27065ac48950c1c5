package podrunner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PreflightContainer is the name of the container of a NovaCompute pool's
// preflight Job; NovaPreflightMapping recognises it by that name.
const PreflightContainer = "preflight"

// NovaPreflightMapping runs a pool's preflight check, `python3 -c <script>
// <contract dir>` from a Nova image, under this host's Python, whose Debian
// modules (py-amqp among them) are the ones the image carries. The
// contract directory is translated to where the runner materialised the
// Secret; the script itself is passed as it is. Without this mapping the
// container would be simulated and the check would pass without looking.
func NovaPreflightMapping() Mapping {
	return Mapping{
		Name: PreflightContainer,
		Match: func(c *corev1.Container) bool {
			return c.Name == PreflightContainer && isNovaImage(c.Image)
		},
		Build: func(c Container) (Command, error) {
			argv := ExpandArgs(c.Spec, c.Env)
			if len(argv) != 4 || argv[1] != "-c" {
				return Command{}, fmt.Errorf("the preflight container runs %d words, want python3 -c <script> <dir>", len(argv))
			}
			dir, ok := c.Mounts.Path(argv[3])
			if !ok {
				return Command{}, fmt.Errorf("the preflight's contract directory %s is not a mount", argv[3])
			}
			return Command{Path: PythonPath, Args: []string{"-c", argv[2], dir}}, nil
		},
	}
}
