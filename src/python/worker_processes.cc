// Compile worker processes (python/worker_processes.h): the pool, its thread, and a job's
// result as the runtime waits for it.

#include "python/worker_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "core/workers.h"
#include "python/cpython.h"

extern char** environ;

namespace triton_embed::detail {
// The glue package's modules (generated glue_sources.cc; python/cpython.cc runs them here).
extern const char* const kGlueModules[][2];
}  // namespace triton_embed::detail

namespace triton_embed::detail::py {

namespace {

using Clock = std::chrono::steady_clock;

// A frame's status byte (glue/worker.py).
constexpr uint8_t kReady = 0, kStarted = 1, kDone = 2, kFailed = 3;
// What a worker writes to its standard output and error as a job's compile starts (START_MARK in
// glue/worker.py): the job's output is what follows it.
constexpr char kStartMarkBytes[] = "\x00\x1e[triton_embed: compile started]\x1e\x00";
constexpr std::string_view kStartMark{kStartMarkBytes, sizeof kStartMarkBytes - 1};
// What a job may print that this process keeps (the rest is dropped).
constexpr size_t kMaxOutput = size_t{1} << 20;
// A worker not started by then (Python started, Triton imported) is ended, and no other
// starts: compiles stay in this process.
constexpr std::chrono::seconds kStartLimit{120};

// Bumped in a forked child, whose copy of the parent's pool has no thread: a job handed to it
// before the fork never finishes there.
std::atomic<uint64_t> g_generation{0};

class WorkerCompile final : public PendingCompile {
 public:
  bool wait() override;
  // Handed to the pool of the process this one forked from: it never finishes here, so it
  // reads as finished, not compiled.
  bool stale() const noexcept {
    return generation_ != g_generation.load(std::memory_order_acquire);
  }
  bool finished() const noexcept override {
    return stale() || state_.load(std::memory_order_acquire) != kPending;
  }
  bool compiled() const noexcept override {
    return !stale() && state_.load(std::memory_order_acquire) == kCompiled;
  }
  std::chrono::steady_clock::time_point finished_at() const noexcept override {
    return finished_at_;
  }
  // From the pool's thread: the worker's result (its payload, what it printed).
  void finish(bool compiled, std::string result, std::string out, std::string err);

 private:
  enum : int { kPending, kCompiled, kNotCompiled };
  void deliver();

  std::atomic<int> state_{kPending};
  const uint64_t generation_ = g_generation.load(std::memory_order_acquire);
  std::mutex mu_;
  std::condition_variable cv_;
  // Written before state_ leaves kPending (read after it has).
  Clock::time_point finished_at_{};
  std::string result_, out_, err_;
  std::atomic<bool> delivered_{false};
};

void WorkerCompile::finish(bool compiled, std::string result, std::string out, std::string err) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_at_ = Clock::now();
  if (compiled) {  // a compile that failed there is shown by its compile here: nothing kept
    result_ = std::move(result);
    out_ = std::move(out);
    err_ = std::move(err);
  }
  state_.store(compiled ? kCompiled : kNotCompiled, std::memory_order_release);
  cv_.notify_all();
}

bool WorkerCompile::wait() {
  if (stale()) return false;
  if (!finished()) {
    ReleaseGilIfHeld no_gil;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished(); });
  }
  if (!compiled()) return false;
  if (!delivered_.exchange(true)) {
    deliver();
    // Shown once: nothing of it is kept (a handle lives as long as its kernel's cache).
    std::string().swap(result_);
    std::string().swap(out_);
    std::string().swap(err_);
  }
  return true;
}

// What the compile showed there, shown here: its Python warnings raised here (this process's
// filters decide), what it printed written to sys.stdout and sys.stderr.
void WorkerCompile::deliver() {
  InFlight in_flight;
  if (closed()) return;
  Gil gil;
  try {
    glue().attr("worker_result")(pyb::bytes(result_));
    pyb::module_ sys = pyb::module_::import("sys");
    for (auto [text, stream] :
         {std::pair<const std::string*, const char*>{&out_, "stdout"}, {&err_, "stderr"}}) {
      pyb::object to = sys.attr(stream);
      if (text->empty() || to.is_none()) continue;  // None: where Python prints nothing
      to.attr("write")(pyb::bytes(*text).attr("decode")("utf-8", "replace"));
    }
  } catch (pyb::error_already_set& e) {
    throw PythonError("a compile worker's warnings, raised here, failed:\n" + format_exception(e));
  }
}

struct Job {
  uint64_t id = 0;
  std::string payload;
  std::shared_ptr<WorkerCompile> handle;
};

struct Worker {
  pid_t pid = -1;
  int to = -1, from = -1, out = -1, err = -1;  // this process's ends
  std::string wbuf, rbuf, outbuf, errbuf;      // to write; read, not yet a whole frame
  bool ready = false;
  uint64_t job = 0;  // in flight (0: none)
  std::shared_ptr<WorkerCompile> handle;
  Clock::time_point started{}, idle_since{};
};

struct Pool {
  std::mutex mu;  // guards everything below; the pool's thread alone touches `workers`' I/O
  std::deque<Job> queue;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<pid_t> closed;  // to reap
  size_t limit = 1;
  uint64_t next_id = 1;
  int wake[2] = {-1, -1};
  bool thread_started = false;
  bool made = false;  // what a worker starts with (below) is known
  std::string python, bootstrap, init_first, init_rest;
  // The environment a worker starts with: this process's when the pool was made, copied
  // holding the GIL (Python changes it only holding the GIL; each job then brings the current
  // one), so no spawn reads `environ` while another thread changes it.
  std::vector<std::string> env;
  bool spawned_first = false;
  double idle_s = 30;
  WorkerStats stats;
};

std::atomic<Pool*> g_pool{nullptr};
// Set once no worker will start (the pool's stats say why): read without the pool's mutex by
// worker_processes_enabled, which callers ask holding the GIL.
std::atomic<bool> g_unavailable{false};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Pool& pool() {
  static Pool* first = [] {
    Pool* p = new Pool();  // never destroyed: its thread and workers live until the process ends
    g_pool.store(p, std::memory_order_release);
    pthread_atfork([] { g_pool.load(std::memory_order_acquire)->mu.lock(); },
                   [] { g_pool.load(std::memory_order_acquire)->mu.unlock(); },
                   [] {
                     // The child has none of the pool's thread and shares none of its workers: it
                     // starts from a new pool, and what was handed to the old one never finishes
                     // here.
                     Pool* old = g_pool.load(std::memory_order_acquire);
                     for (auto& w : old->workers) {
                       close_fd(w->to);
                       close_fd(w->from);
                       close_fd(w->out);
                       close_fd(w->err);
                     }
                     close_fd(old->wake[0]);
                     close_fd(old->wake[1]);
                     Pool* fresh = new Pool();
                     fresh->idle_s = old->idle_s;
                     fresh->stats.unavailable = old->stats.unavailable;
                     g_pool.store(fresh, std::memory_order_release);
                     g_generation.fetch_add(1, std::memory_order_acq_rel);
                   });
    return p;
  }();
  (void)first;
  return *g_pool.load(std::memory_order_acquire);
}

std::string frame(uint64_t id, const std::string& payload) {
  std::string f(12 + payload.size(), '\0');
  const uint32_t size = static_cast<uint32_t>(8 + payload.size());
  std::memcpy(&f[0], &size, 4);  // little-endian hosts only (x86-64, aarch64)
  std::memcpy(&f[4], &id, 8);
  std::memcpy(&f[12], payload.data(), payload.size());
  return f;
}

void fail(const std::shared_ptr<WorkerCompile>& h, Pool& p) {
  ++p.stats.failed;
  h->finish(false, std::string(), std::string(), std::string());
}

// No worker will start: every job waiting fails (each is then compiled in its process).
void make_unavailable(Pool& p, std::string why) {
  if (p.stats.unavailable.empty()) p.stats.unavailable = std::move(why);
  g_unavailable.store(true, std::memory_order_release);
  for (Job& j : p.queue) fail(j.handle, p);
  p.queue.clear();
}

// The child's end of a pipe, moved above the descriptors it is duplicated onto (0 to 4).
int high(int fd) {
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return moved;
}

bool start_worker(Pool& p) {
  // Jobs go down a socket (a write to a worker that ended fails with EPIPE, no SIGPIPE); the
  // results and what the worker prints come up pipes.
  int to[2], from[2], out[2], err[2];
  int* pipes[] = {to, from, out, err};
  int made = 0;
  for (int* fds : pipes) {
    const int rc =
        fds == to ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC);
    if (rc != 0) break;
    ++made;
  }
  if (made < 4) {
    const std::string why = std::string("pipe: ") + std::strerror(errno);
    for (int i = 0; i < made; ++i) {
      ::close(pipes[i][0]);
      ::close(pipes[i][1]);
    }
    make_unavailable(p, "no compile worker process could start (" + why + ")");
    return false;
  }
  to[0] = high(to[0]);
  from[1] = high(from[1]);
  out[1] = high(out[1]);
  err[1] = high(err[1]);
  if (to[0] < 0 || from[1] < 0 || out[1] < 0 || err[1] < 0) {
    const std::string why = std::string("fcntl: ") + std::strerror(errno);
    for (int fd : {to[0], to[1], from[0], from[1], out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    make_unavailable(p, "no compile worker process could start (" + why + ")");
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_adddup2(&fa, to[0], 3);
  posix_spawn_file_actions_adddup2(&fa, from[1], 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);  // a handler or SIG_IGN of this process stays here
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char* argv[] = {const_cast<char*>(p.python.c_str()), const_cast<char*>("-c"),
                  const_cast<char*>(p.bootstrap.c_str()), nullptr};
  std::vector<char*> envp;
  envp.reserve(p.env.size() + 1);
  for (std::string& e : p.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, p.python.c_str(), &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(to[0]);
  ::close(from[1]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    for (int fd : {to[1], from[0], out[0], err[0]}) ::close(fd);
    make_unavailable(p, "no compile worker process could start (posix_spawn of " + p.python + ": " +
                            std::strerror(rc) + ")");
    return false;
  }
  auto w = std::make_unique<Worker>();
  w->pid = pid;
  w->to = to[1];
  w->from = from[0];
  w->out = out[0];
  w->err = err[0];
  for (int fd : {w->to, w->from, w->out, w->err}) fcntl(fd, F_SETFL, O_NONBLOCK);
  w->wbuf = frame(0, p.spawned_first ? p.init_rest : p.init_first);
  w->started = Clock::now();
  p.spawned_first = true;
  ++p.stats.started;
  ++p.stats.running;
  p.workers.push_back(std::move(w));
  return true;
}

void write_some(Worker& w) {
  while (!w.wbuf.empty() && w.to >= 0) {
    const ssize_t n = ::send(w.to, w.wbuf.data(), w.wbuf.size(), MSG_NOSIGNAL);
    if (n > 0) {
      w.wbuf.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // full (EAGAIN), or the worker is gone (EPIPE: its end shows it)
  }
}

// Reads what is there; false at the end of the stream (or an error). Beyond `cap` bytes the
// rest is dropped, and said once at the end of what is kept.
bool read_some(int fd, std::string& into, size_t cap) {
  static constexpr char kCut[] =
      "\n[triton_embed: the rest of a compile worker's output was cut]\n";
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      const size_t room = into.size() < cap ? cap - into.size() : 0;
      into.append(buf, std::min(static_cast<size_t>(n), room));
      if (static_cast<size_t>(n) > room && into.size() == cap) into += kCut;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

void drain_output(Worker& w) {
  if (w.out >= 0 && !read_some(w.out, w.outbuf, kMaxOutput)) close_fd(w.out);
  if (w.err >= 0 && !read_some(w.err, w.errbuf, kMaxOutput)) close_fd(w.err);
}

void close_worker(Pool& p, Worker& w) {
  close_fd(w.to);
  close_fd(w.from);
  close_fd(w.out);
  close_fd(w.err);
  if (w.pid > 0) p.closed.push_back(w.pid);
  w.pid = -1;
  --p.stats.running;
}

// The worker ended (or its stream broke): what it was compiling fails here; a worker that
// never started tells why none will.
void worker_ended(Pool& p, Worker& w) {
  drain_output(w);
  if (!w.ready) {
    std::string why = w.errbuf;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    make_unavailable(p, "a compile worker process (" + p.python + ") ended before it started" +
                            (why.empty() ? std::string() : ":\n" + why));
  }
  if (w.handle) fail(w.handle, p);
  w.handle.reset();
  w.job = 0;
  close_worker(p, w);
}

void on_frame(Pool& p, Worker& w, uint64_t id, uint8_t status, std::string payload) {
  if (id == 0) {
    if (status == kReady) {
      w.ready = true;
      w.idle_since = Clock::now();
      w.outbuf.clear();
      w.errbuf.clear();
      return;
    }
    make_unavailable(p, "a compile worker process (" + p.python + ") could not start:\n" + payload);
    close_worker(p, w);
    return;
  }
  if (id != w.job) return;
  drain_output(w);
  if (status == kStarted) return;  // its output may hold the compile's already: see its mark
  // What it printed before the compile's mark was its own (imports), not the compile's (a buffer
  // cut before the mark keeps what it holds).
  for (std::string* buf : {&w.outbuf, &w.errbuf}) {
    const size_t at = buf->rfind(kStartMark);
    if (at != std::string::npos) buf->erase(0, at + kStartMark.size());
  }
  const bool compiled = status == kDone;
  if (compiled) {
    ++p.stats.compiled;
  } else {
    ++p.stats.failed;
  }
  w.handle->finish(compiled, std::move(payload), std::move(w.outbuf), std::move(w.errbuf));
  w.outbuf.clear();
  w.errbuf.clear();
  w.handle.reset();
  w.job = 0;
  w.idle_since = Clock::now();
}

void read_frames(Pool& p, Worker& w) {
  const bool open = read_some(w.from, w.rbuf, SIZE_MAX);
  size_t at = 0;
  while (w.from >= 0 && w.rbuf.size() - at >= 4) {
    uint32_t size = 0;
    std::memcpy(&size, w.rbuf.data() + at, 4);
    if (w.rbuf.size() - at - 4 < size) break;
    if (size < 9) {  // not a frame of ours
      worker_ended(p, w);
      return;
    }
    uint64_t id = 0;
    std::memcpy(&id, w.rbuf.data() + at + 4, 8);
    const uint8_t status = static_cast<uint8_t>(w.rbuf[at + 12]);
    std::string payload = w.rbuf.substr(at + 13, size - 9);
    at += 4 + size;
    on_frame(p, w, id, status, std::move(payload));
  }
  if (w.from >= 0) w.rbuf.erase(0, at);
  if (!open && w.from >= 0) worker_ended(p, w);
}

// Hands waiting jobs to idle workers, starts workers for the rest (up to the limit), closes
// workers idle too long or beyond the limit.
void schedule(Pool& p) {
  const Clock::time_point now = Clock::now();
  for (auto& w : p.workers) {
    if (w->pid < 0 || !w->ready || w->job != 0 || p.queue.empty()) continue;
    Job j = std::move(p.queue.front());
    p.queue.pop_front();
    w->job = j.id;
    w->handle = std::move(j.handle);
    w->wbuf += frame(j.id, j.payload);
    write_some(*w);
  }
  for (auto& w : p.workers) {
    if (w->pid > 0 && !w->ready && now - w->started >= kStartLimit) {
      kill(w->pid, SIGKILL);
      w->errbuf += "(not started after " + std::to_string(kStartLimit.count()) + " s: ended)";
      worker_ended(p, *w);
    }
  }
  size_t starting = 0, alive = 0;
  for (auto& w : p.workers) {
    if (w->pid < 0) continue;
    ++alive;
    if (!w->ready) ++starting;
  }
  while (!p.queue.empty() && p.stats.unavailable.empty() && alive < p.limit &&
         starting < p.queue.size()) {
    if (!start_worker(p)) break;
    ++alive;
    ++starting;
  }
  const auto idle =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(p.idle_s));
  for (auto& w : p.workers) {
    if (w->pid < 0 || !w->ready || w->job != 0) continue;
    if (now - w->idle_since >= idle || (alive > p.limit && p.queue.empty())) {
      close_worker(p, *w);
      --alive;
    }
  }
  p.workers.erase(std::remove_if(p.workers.begin(), p.workers.end(),
                                 [](const std::unique_ptr<Worker>& w) { return w->pid < 0; }),
                  p.workers.end());
  for (size_t i = 0; i < p.closed.size();) {
    int status = 0;
    const pid_t r = waitpid(p.closed[i], &status, WNOHANG);
    if (r == 0) {
      ++i;
      continue;
    }
    p.closed[i] = p.closed.back();  // reaped, or not ours to reap (SIGCHLD ignored)
    p.closed.pop_back();
  }
}

void run(Pool* pp) {
  Pool& p = *pp;
  std::vector<pollfd> fds;
  std::vector<Worker*> owner;  // of fds[i] (nullptr: the wake pipe)
  std::unique_lock<std::mutex> lock(p.mu);
  for (;;) {
    schedule(p);
    fds.clear();
    owner.clear();
    fds.push_back({p.wake[0], POLLIN, 0});
    owner.push_back(nullptr);
    int timeout_ms = -1;
    const Clock::time_point now = Clock::now();
    for (auto& w : p.workers) {
      for (int fd : {w->from, w->out, w->err}) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        owner.push_back(w.get());
      }
      if (!w->wbuf.empty() && w->to >= 0) {
        fds.push_back({w->to, POLLOUT, 0});
        owner.push_back(w.get());
      }
      if (w->pid > 0 && (!w->ready || w->job == 0)) {
        // Its next deadline: to have started, or to end idle.
        const Clock::time_point deadline =
            w->ready ? w->idle_since + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(p.idle_s))
                     : w->started + kStartLimit;
        const auto left = deadline - now;
        const int ms = static_cast<int>(std::max<int64_t>(
            1, std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1));
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      }
    }
    if (!p.closed.empty()) timeout_ms = timeout_ms < 0 ? 100 : std::min(timeout_ms, 100);
    lock.unlock();
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    lock.lock();
    if (n <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Worker* w = owner[i];
      if (w == nullptr) {
        char buf[256];
        while (::read(p.wake[0], buf, sizeof buf) > 0) {
        }
        continue;
      }
      if (w->pid < 0) continue;  // closed by an earlier descriptor's event
      const int fd = fds[i].fd;
      if (fd == w->to) {
        write_some(*w);
      } else if (fd == w->from) {
        read_frames(p, *w);
      } else if (fd == w->out) {
        if (!read_some(w->out, w->outbuf, kMaxOutput)) close_fd(w->out);
      } else if (fd == w->err) {
        if (!read_some(w->err, w->errbuf, kMaxOutput)) close_fd(w->err);
      }
    }
  }
}

void wake(Pool& p) {
  const char c = 1;
  if (p.wake[1] >= 0) (void)!::write(p.wake[1], &c, 1);
}

bool processes_wanted() {
  const char* env = std::getenv("TRITON_EMBED_COMPILE_PROCESSES");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

// What a worker starts with: this interpreter's executable, the bootstrap and the first frames
// (GIL held; once per pool).
void make_start(Pool& p) {
  std::string python = python_executable();
  std::string bootstrap, first, rest;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  try {
    pyb::list modules;
    for (size_t i = 0; kGlueModules[i][0] != nullptr; ++i) {
      modules.append(pyb::make_tuple(kGlueModules[i][0], kGlueModules[i][1]));
    }
    bootstrap = glue().attr("worker_bootstrap").cast<std::string>();
    first = glue().attr("worker_init")(modules, true).cast<std::string>();
    rest = glue().attr("worker_init")(modules, false).cast<std::string>();
  } catch (pyb::error_already_set& e) {
    throw PythonError("preparing the compile worker processes failed:\n" + format_exception(e));
  }
  ReleaseGilIfHeld no_gil;
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.made) return;
  p.made = true;
  p.python = std::move(python);
  p.bootstrap = std::move(bootstrap);
  p.init_first = std::move(first);
  p.init_rest = std::move(rest);
  p.env = std::move(env);
  const size_t slash = p.python.rfind('/');
  const std::string base = slash == std::string::npos ? p.python : p.python.substr(slash + 1);
  if (p.python.empty() || access(p.python.c_str(), X_OK) != 0 || base.rfind("python", 0) != 0) {
    // Not a Python interpreter to start (an application that embeds Python): none is started.
    make_unavailable(p, "this interpreter's executable ('" + p.python +
                            "', sys.executable) is not a python program to start workers with");
  }
}

}  // namespace

bool worker_processes_enabled() {
  return compile_workers() > 1 && processes_wanted() &&
         !g_unavailable.load(std::memory_order_acquire);
}

std::shared_ptr<PendingCompile> submit_to_workers(std::string job) {
  auto h = std::make_shared<WorkerCompile>();
  const size_t limit = compile_workers();
  Pool& p = pool();
  bool made = false;
  {
    ReleaseGilIfHeld no_gil;
    std::lock_guard<std::mutex> lock(p.mu);
    made = p.made;
  }
  if (!made) make_start(p);
  ReleaseGilIfHeld no_gil;
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.stats.unavailable.empty()) {
    fail(h, p);
    return h;
  }
  if (!p.thread_started) {
    if (pipe2(p.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
      make_unavailable(p, std::string("no compile worker process could start (pipe2: ") +
                              std::strerror(errno) + ")");
      fail(h, p);
      return h;
    }
    try {
      std::thread(run, &p).detach();
    } catch (const std::system_error& e) {
      make_unavailable(p, std::string("no compile worker process could start (") + e.what() + ")");
      fail(h, p);
      return h;
    }
    p.thread_started = true;
  }
  p.limit = std::max<size_t>(1, limit);
  p.queue.push_back({p.next_id++, std::move(job), h});
  wake(p);
  return h;
}

WorkerStats worker_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.stats;
}

void set_idle_seconds(double seconds) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.idle_s = seconds;
  wake(p);
}

}  // namespace triton_embed::detail::py
