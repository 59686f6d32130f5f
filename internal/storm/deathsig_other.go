//go:build !linux

package storm

import "os/exec"

func setDeathSignal(*exec.Cmd) {}
