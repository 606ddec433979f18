#include "fleet/child_process.h"

#include <boost/asio/signal_set.hpp>

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

extern char** environ;

namespace switchyard::fleet {

namespace {

constexpr std::string_view kShellSyntax = "'\"\\$`|&;<>(){}*?[]#~\n";

// Closes every descriptor from `first` on except `keep`.
void close_from(int first, int keep) {
  auto close_span = [](unsigned lo, unsigned hi) {
    if (lo > hi) return;
    if (syscall(SYS_close_range, lo, hi, 0) == 0) return;
    // Kernels before 5.9: one close per possible descriptor.
    rlimit limit{};
    const unsigned top = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < hi
                             ? static_cast<unsigned>(limit.rlim_cur)
                             : hi;
    for (unsigned fd = lo; fd <= top && fd < 1u << 20; ++fd) close(static_cast<int>(fd));
  };
  close_span(static_cast<unsigned>(first), static_cast<unsigned>(keep) - 1);
  close_span(static_cast<unsigned>(keep) + 1, ~0U);
}

// Forks and execs `program`. Between fork and exec the child makes only
// async-signal-safe system calls. An exec failure comes back through a
// close-on-exec pipe, so the caller gets an error rather than an engine that
// "exited with status 127".
Result<ChildProcess> start(const std::string& program, const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env,
                           const std::string& description, ChildProcess (*make)(pid_t, int, int)) {
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
  std::vector<std::string> arg_strings = args;
  std::vector<char*> argv;
  for (auto& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0)
    return Error{fmt::format("cannot create a pipe: {}", strerror(errno))};
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) {
    close(output[0]);
    close(output[1]);
    return Error{fmt::format("cannot create a pipe: {}", strerror(errno))};
  }
  int input[2];
  if (pipe2(input, O_CLOEXEC) != 0) {
    for (int fd : {output[0], output[1], status[0], status[1]}) close(fd);
    return Error{fmt::format("cannot create a pipe: {}", strerror(errno))};
  }
  fcntl(input[1], F_SETFL, O_NONBLOCK);  // the gateway's end only
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // A gateway killed with SIGKILL must not leave its engines running; the
    // parent may have died before the prctl, hence the getppid() check.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    // Default dispositions and an empty mask: the gateway handles or blocks
    // some signals, and the engine must not inherit that.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(input[0], 0);
    dup2(output[1], 1);
    dup2(output[1], 2);
    // Whatever the gateway has open (listening and client sockets, upstream
    // connections, other engines' pipes) stays out of the engine, even a
    // descriptor someone opened without close-on-exec.
    close_from(3, status[1]);
    execve(program.c_str(), argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] auto n = write(status[1], &err, sizeof err);
    _exit(127);
  }
  const int fork_errno = errno;
  close(output[1]);
  close(status[1]);
  close(input[0]);
  if (pid < 0) {
    close(output[0]);
    close(status[0]);
    close(input[1]);
    return Error{fmt::format("cannot start '{}': {}", description, strerror(fork_errno))};
  }
  setpgid(pid, pid);  // also here, so a signal sent right away reaches the group
  // Waiting for the exec also means the child holds none of the gateway's
  // sockets once this returns (http/descriptor_states.h relies on it).
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(status[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(status[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    close(output[0]);
    close(input[1]);
    int ignored = 0;
    waitpid(pid, &ignored, 0);
    return Error{fmt::format("cannot start '{}': {}", description, strerror(exec_errno))};
  }
  return make(pid, output[0], input[1]);
}

}  // namespace

Result<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return Error{fmt::format("cannot start '{}': not found on PATH", name)};
}

std::optional<std::vector<std::string>> split_plain_command(
    std::string_view command, const std::vector<std::string_view>& placeholders) {
  std::string masked(command);
  for (auto p : placeholders) {
    for (std::size_t at = 0; (at = masked.find(p, at)) != std::string::npos; at += p.size())
      masked.replace(at, p.size(), std::string(p.size(), '_'));
  }
  if (masked.find_first_of(kShellSyntax) != std::string::npos) return std::nullopt;
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < command.size()) {
    const auto start = command.find_first_not_of(" \t", i);
    if (start == std::string_view::npos) break;
    const auto end = std::min(command.find_first_of(" \t", start), command.size());
    words.emplace_back(command.substr(start, end - start));
    i = end;
  }
  if (words.empty() || words.front().find('=') != std::string::npos) return std::nullopt;
  return words;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env) {
  auto program = find_program(argv.at(0));
  if (!program) return program.error();
  return start(*program, argv, env, argv.at(0),
               [](pid_t pid, int out, int in) { return ChildProcess(pid, out, in); });
}

Result<ChildProcess> ChildProcess::spawn_shell(const std::string& command,
                                               const std::map<std::string, std::string>& env) {
  return start("/bin/sh", {"/bin/sh", "-c", command}, env, command,
               [](pid_t pid, int out, int in) { return ChildProcess(pid, out, in); });
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pgid_(std::exchange(o.pgid_, -1)),
      output_fd_(std::exchange(o.output_fd_, -1)),
      input_fd_(std::exchange(o.input_fd_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    close_pipes();
    pgid_ = std::exchange(o.pgid_, -1);
    output_fd_ = std::exchange(o.output_fd_, -1);
    input_fd_ = std::exchange(o.input_fd_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  close_pipes();
}

void ChildProcess::close_pipes() {
  for (int fd : {output_fd_, input_fd_})
    if (fd >= 0) close(fd);
}

int ChildProcess::release_output_fd() {
  return std::exchange(output_fd_, -1);
}

void ChildProcess::signal(int sig) const {
  if (pgid_ > 0) ::kill(-pgid_, sig);
}

void ChildProcess::tell(std::string_view text) const {
  if (input_fd_ < 0) return;
  [[maybe_unused]] auto n = ::write(input_fd_, text.data(), text.size());
}

bool ChildProcess::group_alive() const {
  return pgid_ > 0 && ::kill(-pgid_, 0) == 0;
}

struct ChildReaper::State : std::enable_shared_from_this<ChildReaper::State> {
  explicit State(boost::asio::any_io_executor ex) : signals(ex, SIGCHLD) {}

  void wait() {
    signals.async_wait([self = shared_from_this()](const boost::system::error_code& ec, int) {
      if (ec) return;
      self->reap();
      self->wait();
    });
  }

  void reap() {
    bool reaped = false;
    for (;;) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;  // none has ended, or no children at all
      reaped = true;
      auto it = waiting.find(pid);
      if (it == waiting.end()) continue;  // an orphan of an engine's group
      auto callback = std::move(it->second);
      waiting.erase(it);
      callback(status);
    }
    if (reaped && any_exit) any_exit();
  }

  boost::asio::signal_set signals;
  std::map<pid_t, std::function<void(int)>> waiting;
  std::function<void()> any_exit;
};

ChildReaper::ChildReaper(boost::asio::any_io_executor executor)
    : state_(std::make_shared<State>(executor)) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  state_->wait();
}

ChildReaper::~ChildReaper() {
  boost::system::error_code ec;
  state_->signals.cancel(ec);
  state_->any_exit = nullptr;
  state_->waiting.clear();
}

void ChildReaper::on_exit(pid_t pid, std::function<void(int)> on_exit) {
  state_->waiting[pid] = std::move(on_exit);
}

void ChildReaper::on_any_exit(std::function<void()> callback) {
  state_->any_exit = std::move(callback);
}

void ChildReaper::reap() {
  state_->reap();
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended (wait status {})", status);
}

}  // namespace switchyard::fleet
