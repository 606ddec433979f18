// A supervised engine process: started in a process group of its own (so
// stopping it stops whatever it spawned), with stdout and stderr on one pipe
// for the supervisor to read, stdin a pipe the supervisor holds open for the
// process's life (end of file tells the engine its supervisor is gone, as
// llama.cpp's router tells its children), no descriptor of the gateway but
// those three, and SIGTERM when the gateway dies. ChildReaper waits for every child: the
// gateway is a child subreaper, so engines orphaned by their shell are reaped
// here too.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace switchyard::fleet {

// The words of a command that has no shell syntax, split on spaces and tabs;
// nullopt when it needs /bin/sh: any quote, backslash, $, `, |, &, ;, <, >,
// (, ), {, }, *, ?, [, ], #, ~ or newline, or a first word with '=' (an
// environment assignment). There is no quoting: a word with a space in it
// needs the shell. Each of `placeholders` (e.g. "${PORT}") counts as plain
// text, for commands substituted word by word afterwards.
std::optional<std::vector<std::string>> split_plain_command(
    std::string_view command, const std::vector<std::string_view>& placeholders = {});

// argv[0] as execve needs it: a name without '/' is looked up on PATH (in
// the parent, because the child may only make async-signal-safe calls); a
// name with '/' is returned as it is.
Result<std::string> find_program(const std::string& name);

class ChildProcess {
 public:
  // Runs argv[0] (searched on PATH when it has no '/') with argv, the current
  // environment plus `env`. Precondition: argv is not empty.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                    const std::map<std::string, std::string>& env);
  // Runs `command` with `/bin/sh -c`.
  static Result<ChildProcess> spawn_shell(const std::string& command,
                                          const std::map<std::string, std::string>& env);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();  // closes the pipes; does not stop the process

  // The direct child, which leads the group.
  pid_t pid() const { return pgid_; }
  // Read end of the child's combined stdout/stderr; owned by this object.
  int output_fd() const { return output_fd_; }
  // Hands the pipe to the caller, who then closes it.
  int release_output_fd();

  // Signals the whole process group.
  void signal(int sig) const;
  // Writes `text` to the child's stdin, if the pipe takes it now (it never
  // blocks; a child that has gone is no error).
  void tell(std::string_view text) const;
  // Whether any process of the group is still running or not yet reaped. A
  // shell may exit on SIGTERM while the engine it started runs on, so
  // stopping waits for this, not for the direct child.
  bool group_alive() const;

 private:
  ChildProcess(pid_t pid, int output, int input)
      : pgid_(pid), output_fd_(output), input_fd_(input) {}
  void close_pipes();
  pid_t pgid_ = -1;
  int output_fd_ = -1;
  int input_fd_ = -1;  // the write end of the child's stdin
};

// Reaps every child of this process as it ends, learning of it from SIGCHLD
// on the executor (no polling), and tells whoever asked about that pid. Makes
// the process a child subreaper, so orphaned grandchildren (an engine whose
// shell was killed) are children too and never linger as zombies.
// One per process at a time: it waits for any child, so nothing else may wait
// for its own children while it lives. Used from the executor's thread only.
class ChildReaper {
 public:
  explicit ChildReaper(boost::asio::any_io_executor executor);
  ~ChildReaper();
  ChildReaper(const ChildReaper&) = delete;
  ChildReaper& operator=(const ChildReaper&) = delete;

  // Calls `on_exit(wait_status)` once, on the executor, when `pid` has been
  // reaped. Register before the event loop runs again after spawning (the
  // loop is what reaps).
  void on_exit(pid_t pid, std::function<void(int)> on_exit);
  // Calls `callback` after every reaping pass that reaped something (e.g. to
  // re-check process groups that are being stopped).
  void on_any_exit(std::function<void()> callback);
  // Reaps what has ended now, without waiting for the signal.
  void reap();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// A readable description of a wait status: "exited with status 1",
// "killed by signal 9 (Killed)".
std::string describe_exit(int status);

}  // namespace switchyard::fleet
