#include "fleet/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace switchyard::fleet {

Result<ChildProcess> ChildProcess::spawn(const std::string& command,
                                         const std::map<std::string, std::string>& env) {
  // Orphans of the group (an engine whose shell exited) become our children,
  // so they are reaped here instead of lingering as zombies.
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Error{fmt::format("cannot create a pipe: {}", strerror(errno))};

  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    auto name = entry.substr(0, entry.find('='));
    if (!env.count(std::string(name))) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, default signal dispositions (the gateway blocks or
  // handles some signals; the engine must not inherit that).
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::string cmd = command;
  char sh[] = "/bin/sh";
  char dash_c[] = "-c";
  char* argv[] = {sh, dash_c, cmd.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return Error{fmt::format("cannot start '{}': {}", command, strerror(rc))};
  }
  return ChildProcess(pid, fds[0]);
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pgid_(std::exchange(o.pgid_, -1)),
      output_fd_(std::exchange(o.output_fd_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    if (output_fd_ >= 0) close(output_fd_);
    pid_ = std::exchange(o.pid_, -1);
    pgid_ = std::exchange(o.pgid_, -1);
    output_fd_ = std::exchange(o.output_fd_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (output_fd_ >= 0) close(output_fd_);
}

int ChildProcess::release_output_fd() {
  return std::exchange(output_fd_, -1);
}

void ChildProcess::signal(int sig) const {
  if (pgid_ > 0) ::kill(-pgid_, sig);
}

bool ChildProcess::try_wait(int& status) {
  if (pgid_ <= 0) return true;
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(-pgid_, &st, WNOHANG);
    if (r <= 0) break;  // nothing more has ended (or no children left)
    if (r == pid_) {
      status = st;
      pid_ = -1;
    }
  }
  return pid_ < 0;
}

bool ChildProcess::group_alive() {
  int ignored = 0;
  try_wait(ignored);  // reap first: a zombie still counts for kill()
  return pgid_ > 0 && ::kill(-pgid_, 0) == 0;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended (wait status {})", status);
}

}  // namespace switchyard::fleet
