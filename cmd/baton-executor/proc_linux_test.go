//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

var buildExecutorOnce = sync.OnceValues(func() (string, error) {
	dir, err := buildDir("baton-executor-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "baton-executor")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// alive reports whether pid runs (a zombie, killed and not yet reaped by
// its new parent, has stopped).
func alive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// An executor killed outright (SIGKILL, the OOM killer) leaves no copy of
// its command running: the command dies with it, and what the command
// started is killed by the next start before the run goes on. Both ran on,
// and the restart ran the command again beside them.
func TestExecutorKilledLeavesNothingRunning(t *testing.T) {
	s := startServer(t)
	bin, err := buildExecutorOnce()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"ops_bot.v1":{"command":["sh","-c","sleep 300 & echo $$ $! >> `+pids+`; wait"]}}}`), 0o644)
	var started [][2]int // shell, sleep
	t.Cleanup(func() {
		for _, p := range started {
			for _, pid := range p {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.HasPrefix(b, []byte("s")) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	startExecutor := func(name string) *exec.Cmd {
		cmd := exec.Command(bin, "--url", s.base, "--key", s.key, "--config", cfg, "--state", filepath.Join(dir, "state.json"))
		logf, _ := os.Create(filepath.Join(dir, name+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("%s:\n%s", name, b)
			}
		})
		return cmd
	}
	waitStarts := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			b, _ := os.ReadFile(pids)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if strings.TrimSpace(string(b)) != "" && len(lines) >= n {
				started = started[:0]
				for _, l := range lines {
					var p [2]int
					fmt.Sscan(l, &p[0], &p[1])
					started = append(started, p)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the command did not start %d times: %q", n, b)
			}
		}
	}

	first := startExecutor("first")
	id := s.create(nil)
	s.approve(id)
	waitStarts(1)
	first.Process.Kill()
	first.Wait()
	// The command, the executor's child, dies with it.
	shell, sleep := started[0][0], started[0][1]
	for deadline := time.Now().Add(10 * time.Second); alive(shell); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs after its executor was killed", shell)
		}
	}
	// What it started is killed by the next start, before the command runs
	// again.
	startExecutor("second")
	waitStarts(2)
	if alive(sleep) {
		t.Fatalf("the first command's child (pid %d) still runs beside the command run again (%v)", sleep, started[1])
	}
}

// A group recorded by a dead executor is killed only while it is still the
// run's: a number reused by a later group (its leader started at another
// time) is left alone.
func TestKillLeftoverChecksTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done }()
	g := groupOf(cmd.Process.Pid)
	if g == nil {
		t.Fatal("no group recorded")
	}
	for _, other := range []ProcGroup{{ID: g.ID, StartTime: g.StartTime + 1, BootID: g.BootID}, {ID: g.ID, StartTime: g.StartTime, BootID: "another boot"}} {
		if n, err := killLeftover(&other, ""); n != 0 || err != nil {
			t.Fatalf("%+v: killed %d, %v: another group's", other, n, err)
		}
	}
	select {
	case <-done:
		t.Fatal("the group was killed for another's")
	case <-time.After(100 * time.Millisecond):
	}
	if n, err := killLeftover(g, ""); n != 2 || err != nil {
		t.Fatalf("killed %d, %v; want the shell and its sleep", n, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the group still runs")
	}
}

// What a command started before its group was written down (the executor
// killed in that instant) is found by the run's id in its environment, and
// killed before the run goes on.
func TestExecutorKillsALeftoverByItsRunID(t *testing.T) {
	st := mustState(t)
	runID := fmt.Sprintf("run-test-%d", time.Now().UnixNano())
	if err := st.Put(Run{HandoffID: "h1", ExecutorRunID: runID, Protocol: "ops_bot.v1", Phase: phaseRunning}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.Env = append(os.Environ(), "BATON_EXECUTOR_RUN_ID="+runID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done }()
	// Baton answers nothing useful: the run cannot go on, its leftover is
	// killed all the same, first.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "{}", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	e := &Executor{Base: srv.URL, Key: "k", Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": {Command: []string{"true"}}}},
		State: st, Log: zerolog.New(zerolog.NewTestWriter(t)), Backoff: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { e.Run(ctx); close(ran) }()
	defer func() { cancel(); <-ran }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the previous start's command still runs")
	}
}

// A hang-up (the terminal it ran in closed) stops the executor as SIGINT
// and SIGTERM do: its commands stopped with everything they started, its
// log saying so, exit status 0. It died at once, the commands' children
// left running until the next start.
func TestExecutorStopsGracefullyOnAHangUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"store_unavailable"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	bin, err := buildExecutorOnce()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"ops_bot.v1":{"command":["true"]}}}`), 0o644)
	var log bytes.Buffer
	cmd := exec.Command(bin, "--key", "k", "--url", srv.URL, "--config", cfg, "--state", filepath.Join(dir, "state.json"))
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(log.String(), "baton-executor stopped") {
			t.Fatalf("after SIGHUP: %v; log:\n%s", err, log.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 10 s after SIGHUP; log:\n%s", log.String())
	}
}
