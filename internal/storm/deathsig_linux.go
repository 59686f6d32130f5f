package storm

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the replica if the process that
// started it dies (a test binary killed by its timeout), so no replica
// outlives its driver.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
