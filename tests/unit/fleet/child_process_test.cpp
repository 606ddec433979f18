#include "fleet/child_process.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace switchyard::fleet {
namespace {

using namespace std::chrono_literals;

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Children of this process that are zombies (ended, not reaped).
int zombie_children() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid() &&
        state == 'Z')
      ++count;
  }
  return count;
}

// Runs `io` until `done()` or a generous bound; returns done().
template <class Done>
bool run_until(boost::asio::io_context& io, Done done) {
  for (int i = 0; i < 200 && !done(); ++i) {
    io.restart();
    io.run_for(25ms);
  }
  return done();
}

TEST(SplitPlainCommand, SplitsWordsWithoutShellSyntax) {
  EXPECT_EQ(
      split_plain_command("  ${SWITCHYARD} sim\t--port ${PORT} ", {"${SWITCHYARD}", "${PORT}"}),
      (std::vector<std::string>{"${SWITCHYARD}", "sim", "--port", "${PORT}"}));
  EXPECT_EQ(split_plain_command("engine ${HOME}", {"${PORT}"}), std::nullopt);
  EXPECT_EQ(
      split_plain_command("llama-server -m /m/q.gguf --port 8001 -np 4"),
      (std::vector<std::string>{"llama-server", "-m", "/m/q.gguf", "--port", "8001", "-np", "4"}));
}

TEST(SplitPlainCommand, LeavesShellSyntaxToTheShell) {
  for (const char* c :
       {"a | b", "a && b", "a; b", "a > log", "echo 'x y'", "echo \"x\"", "a \\ b", "echo $HOME",
        "echo `id`", "a *.gguf", "FOO=1 engine", "a # c", "(a)", "a\nb", "~/engine"})
    EXPECT_EQ(split_plain_command(c), std::nullopt) << c;
  EXPECT_EQ(split_plain_command("   "), std::nullopt);
  EXPECT_EQ(split_plain_command("engine --opt=1"), (std::vector<std::string>{"engine", "--opt=1"}));
}

TEST(ChildProcess, InheritsNoDescriptorButTheThreeStandardOnes) {
  // A descriptor opened without close-on-exec, as Asio opens sockets.
  const int leak = dup2(open("/dev/null", O_RDONLY), 200);
  ASSERT_EQ(leak, 200);
  auto child = ChildProcess::spawn({"ls", "-1", "/proc/self/fd"}, {});
  ASSERT_TRUE(child) << child.error().message;
  const std::string fds = read_all(child->output_fd());
  close(leak);
  int status = 0;
  ASSERT_EQ(waitpid(child->pid(), &status, 0), child->pid());
  EXPECT_EQ(fds, "0\n1\n2\n3\n") << "(3 is ls's own directory handle)";
}

TEST(ChildProcess, StdinStaysOpenUntilTheSupervisorLetsGo) {
  // llama.cpp's router children exit on end of file on stdin: it must come
  // when the gateway lets go of the engine, not at once (/dev/null).
  auto spawned = ChildProcess::spawn({"/bin/sh", "-c", "echo started; cat; echo closed"}, {});
  ASSERT_TRUE(spawned) << spawned.error().message;
  std::optional<ChildProcess> child = std::move(*spawned);
  const int out = child->release_output_fd();
  const pid_t pid = child->pid();
  char buf[64];
  ASSERT_EQ(read(out, buf, 8), 8);
  EXPECT_EQ(std::string(buf, 8), "started\n");
  pollfd ready{out, POLLIN, 0};
  EXPECT_EQ(poll(&ready, 1, 100), 0) << "stdin ended while the supervisor held it";
  child.reset();
  EXPECT_EQ(read_all(out), "closed\n");
  close(out);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(ChildProcess, AProgramThatCannotStartIsAnError) {
  auto child = ChildProcess::spawn({"/nonexistent/engine", "--port", "1"}, {});
  ASSERT_FALSE(child);
  EXPECT_NE(child.error().message.find("No such file"), std::string::npos) << child.error().message;
  auto missing = ChildProcess::spawn({"no-such-engine-on-path"}, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("not found on PATH"), std::string::npos);
}

TEST(ChildProcess, EnvironmentIsAdded) {
  auto child = ChildProcess::spawn_shell("echo $SY_TEST_VALUE", {{"SY_TEST_VALUE", "42"}});
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_EQ(read_all(child->output_fd()), "42\n");
  int status = 0;
  waitpid(child->pid(), &status, 0);
}

TEST(ChildReaper, ReportsAnExitAsItHappens) {
  boost::asio::io_context io;
  ChildReaper reaper(io.get_executor());
  auto child = ChildProcess::spawn({"/bin/sh", "-c", "exit 3"}, {});
  ASSERT_TRUE(child) << child.error().message;
  std::optional<int> status;
  reaper.on_exit(child->pid(), [&](int s) { status = s; });
  ASSERT_TRUE(run_until(io, [&] { return status.has_value(); }));
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  EXPECT_FALSE(child->group_alive());
}

TEST(ChildReaper, ReapsOrphanedGrandchildren) {
  // The shell exits at once; the engine it started (here a short sleep)
  // becomes our child as we are a subreaper, and must not stay a zombie.
  boost::asio::io_context io;
  ChildReaper reaper(io.get_executor());
  auto child = ChildProcess::spawn_shell("sleep 0.2 & exit 0", {});
  ASSERT_TRUE(child) << child.error().message;
  bool shell_gone = false;
  reaper.on_exit(child->pid(), [&](int) { shell_gone = true; });
  ASSERT_TRUE(run_until(io, [&] { return shell_gone; }));
  EXPECT_TRUE(child->group_alive()) << "the orphan runs on in the group";
  ASSERT_TRUE(run_until(io, [&] { return !child->group_alive(); }));
  EXPECT_EQ(zombie_children(), 0);
}

}  // namespace
}  // namespace switchyard::fleet
