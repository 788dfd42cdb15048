//go:build !unix

package evaluator

import "os/exec"

// setProcessGroup keeps os/exec's default cancellation (kill the process):
// process groups are a Unix feature.
func setProcessGroup(cmd *exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
