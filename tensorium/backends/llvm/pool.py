"""Tensorium's own thread pool for parallel loops, as LLVM IR: a caller never waits for a thread that is not running.

``tensorium_parallel_for(threads, body, ctx, trips)`` on libgomp ends every loop at the team's barrier, so a loop
lasts until every team thread has *arrived*, even one that never got a core: on a machine where another process
holds a core, a worker the OS has descheduled stalls each kernel for a scheduler time slice (milliseconds), and a
model of a hundred kernels becomes several times slower than on one thread. This pool keeps the caller's progress
independent of the workers':

- **work sharing by claims**: a loop's iterations are claimed by compare-and-swap on one 64-bit word holding the
  job's epoch (high 32 bits) and the next unclaimed iteration (low 32 bits); the caller claims too, so when no
  worker wakes up it runs the whole loop itself. Claims are *guided*: each takes ``remaining / (2 x threads)``
  iterations (at least one), so the first claims are large (few atomics) and the last small (a thread that the
  OS preempts holds up the others by a small claim at most);
- **the caller waits only for claimed work**: a counter of finished iterations tells it when the loop is done;
  a worker that wakes up after the last claim finds nothing to do and does not touch the job (its claim fails
  on the epoch), so nothing waits for it;
- **bounded spinning, then sleeping**: idle workers poll the job word for :data:`WORKER_SPIN_CYCLES` time-stamp
  cycles (back-to-back kernels find them awake), then sleep on a futex that the caller wakes only when someone
  sleeps; the caller waiting for another thread's last claim spins for :data:`CALLER_SPIN_CYCLES`, then calls
  ``sched_yield`` between polls, so a descheduled worker sharing its core gets the core back;
- **threads asked for are honoured**: a job takes at most ``threads - 1`` workers (tickets), and the pool grows
  to the largest count asked for (``pthread_create``, from the caller, while it holds the pool);
- **one job at a time**: a second caller (another Python thread, or a parallel loop inside a chunk) that finds
  the pool busy runs its loop alone, serially, rather than waiting.

The state is one global array of 64-bit words, hot fields a cache line apart (:data:`FIELDS`). Linux on x86-64
only (futex through ``syscall``, ``pause``, ``rdtsc``): :func:`tensorium.backends.llvm.runtime.register_runtime`
falls back to libgomp or the Python pool elsewhere.
"""

from __future__ import annotations

from llvmlite import ir

from .common import I32, I64, PTR

ENTRY = "tensorium_parallel_for_pool"
"""The symbol of the pool's ``tensorium_parallel_for``."""

STATE = "tensorium_pool_state"
"""The symbol of the pool's state (an array of i64, see :data:`FIELDS`)."""

WORKER_SPIN_CYCLES = 400_000
"""How long an idle worker polls for the next job before it sleeps, in time-stamp counter cycles (about 0.1 to
0.2 ms): enough for the kernels of one model call to follow one another without a futex wake-up each."""

CALLER_SPIN_CYCLES = 20_000
"""How long a caller whose own claims are done polls for the other threads' claims before it yields its core
between polls (about 5 to 10 us)."""

MAX_WORKERS = 255
"""The most worker threads the pool starts (``threads - 1`` for the largest ``threads`` asked for)."""

FIELDS = {
    "word": 0,  # epoch << 32 | next unclaimed iteration
    "done": 8,  # iterations finished in this job
    "body": 16,
    "ctx": 17,
    "trips": 18,
    "threads": 19,  # threads taking part in this job, the caller included
    "status": 20,  # the first nonzero status of a chunk (cmpxchg from 0)
    "tickets": 21,  # workers that joined this job
    "signal": 24,  # the futex word (its low 32 bits): the epoch of the latest job
    "sleepers": 25,  # workers asleep on the futex, or about to be
    "busy": 32,  # 1 while a caller owns the pool
    "workers": 33,  # worker threads started
    "thread_ids": 40,  # pthread_t of each worker, MAX_WORKERS words
}
"""Word offsets into the state array; the first four groups are cache lines apart (no false sharing between the
claim word, the finished count, the job and the futex)."""

STATE_WORDS = FIELDS["thread_ids"] + MAX_WORKERS + 1

SYS_FUTEX, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 202, 128, 129
MAX_TRIPS = 2**31 - 1
"""Loops longer than this (the low half of the claim word) run serially on the caller."""


def pool_runtime_ir(triple: str) -> str:
    """The pool's LLVM module for an x86-64 Linux ``triple``: the state, the worker loop and the entry."""
    return _PoolBuilder(triple).module_text()


class _PoolBuilder:
    """Builds the pool's functions into one module (see the module docstring)."""

    def __init__(self, triple: str) -> None:
        m = self.module = ir.Module("tensorium_pool")
        m.triple = triple
        state_type = ir.ArrayType(I64, STATE_WORDS)
        self.state = ir.GlobalVariable(m, state_type, STATE)
        self.state.initializer = ir.Constant(state_type, None)
        self.state.align = 64
        self.body_type = ir.FunctionType(I32, [PTR, I64, I64])
        self.syscall = ir.Function(m, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.sched_yield = ir.Function(m, ir.FunctionType(I32, []), "sched_yield")
        self.pthread_create = ir.Function(m, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]), "pthread_create")
        self.cycles = ir.Function(m, ir.FunctionType(I64, []), "llvm.readcyclecounter")
        self.pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
        self.run_claims = self._run_claims()
        self.worker = self._worker()
        self._entry()

    def module_text(self) -> str:
        return str(self.module)

    # --- helpers -----------------------------------------------------------------------------------
    def field(self, b: ir.IRBuilder, name: str, index: ir.Value | None = None) -> ir.Value:
        offset: ir.Value = I64(FIELDS[name])
        if index is not None:
            offset = b.add(offset, index)
        return b.gep(self.state, [I64(0), offset], inbounds=True)

    def load(self, b: ir.IRBuilder, name: str, ordering: str = "monotonic") -> ir.Value:
        return b.load_atomic(self.field(b, name), ordering, 8, typ=I64)

    def store(self, b: ir.IRBuilder, name: str, value: ir.Value, ordering: str = "monotonic") -> None:
        b.store_atomic(value, self.field(b, name), ordering, 8)

    def futex(self, b: ir.IRBuilder, op: int, value: ir.Value) -> None:
        """``syscall(SYS_futex, &signal, op, value, NULL)``; glibc reads each variadic argument as a long."""
        b.call(self.syscall, [I64(SYS_FUTEX), self.field(b, "signal"), I64(op), value, ir.Constant(PTR, None)])

    @staticmethod
    def smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed("<", x, y), x, y)

    @staticmethod
    def smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed(">", x, y), x, y)

    # --- claiming and running iterations ---------------------------------------------------------------
    def _run_claims(self) -> ir.Function:
        """``run_claims(epoch)``: claim and run iterations of job ``epoch`` until none is left (or the job is no
        longer the current one). Fields are read after the claim word and trusted only when the claim's
        compare-and-swap succeeds: the job cannot have been replaced while iterations were unclaimed."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64]), "tensorium_pool_run_claims")
        fn.linkage = "internal"
        (epoch,) = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        claim, check, attempt, run, failed, record, done = (
            fn.append_basic_block(n) for n in ("claim", "check", "attempt", "run", "failed", "record", "done")
        )
        b.branch(claim)
        b.position_at_end(claim)
        word = self.load(b, "word", "acquire")
        b.cbranch(b.icmp_unsigned("==", b.lshr(word, I64(32)), epoch), check, done)
        b.position_at_end(check)
        start = b.and_(word, I64(0xFFFFFFFF))
        trips = self.load(b, "trips")
        b.cbranch(b.icmp_signed("<", start, trips), attempt, done)
        b.position_at_end(attempt)
        threads = self.load(b, "threads")
        share = b.sdiv(b.sub(trips, start), b.mul(threads, I64(2)))
        end = self.smin(b, b.add(start, self.smax(b, share, I64(1))), trips)
        new = b.or_(b.shl(epoch, I64(32)), end)
        swap = b.cmpxchg(self.field(b, "word"), word, new, "acq_rel", "acquire")
        b.cbranch(b.extract_value(swap, 1), run, claim)
        b.position_at_end(run)
        body = b.inttoptr(self.load(b, "body"), self.body_type.as_pointer())  # typed: the call's signature
        ctx = b.inttoptr(self.load(b, "ctx"), PTR)
        status = b.call(body, [ctx, start, end])
        b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, record)
        b.position_at_end(failed)
        b.cmpxchg(self.field(b, "status"), I64(0), b.sext(status, I64), "monotonic", "monotonic")
        b.branch(record)
        b.position_at_end(record)
        b.atomic_rmw("add", self.field(b, "done"), b.sub(end, start), "release")
        b.branch(claim)
        b.position_at_end(done)
        b.ret_void()
        return fn

    # --- the worker threads ------------------------------------------------------------------------------
    def _worker(self) -> ir.Function:
        """The start routine of a worker thread: wait for a new epoch (spin, then futex), take a ticket, run
        claims, forever."""
        fn = ir.Function(self.module, ir.FunctionType(PTR, [PTR]), "tensorium_pool_worker")
        fn.linkage = "internal"
        blocks = ("entry", "wait", "spin", "relax", "sleep", "asleep", "woken", "job", "help")
        entry, wait, spin, relax, sleep, asleep, woken, job, help_ = (fn.append_basic_block(n) for n in blocks)
        b = ir.IRBuilder(entry)
        first = b.lshr(self.load(b, "word", "acquire"), I64(32))
        b.branch(wait)

        b.position_at_end(wait)  # seen: the epoch of the last job this worker looked at
        seen = b.phi(I64, "seen")
        seen.add_incoming(first, entry)
        t0 = b.call(self.cycles, [])
        b.branch(spin)

        b.position_at_end(spin)
        epoch = b.lshr(self.load(b, "word", "acquire"), I64(32))
        b.cbranch(b.icmp_unsigned("!=", epoch, seen), job, relax)

        b.position_at_end(relax)
        b.call(self.pause, [])
        waited = b.sub(b.call(self.cycles, []), t0)
        b.cbranch(b.icmp_unsigned("<", waited, I64(WORKER_SPIN_CYCLES)), spin, sleep)

        b.position_at_end(sleep)  # read the futex word, announce the sleep, look once more, then sleep
        signal = b.trunc(self.load(b, "signal", "seq_cst"), I32)
        b.atomic_rmw("add", self.field(b, "sleepers"), I64(1), "seq_cst")
        again = b.lshr(self.load(b, "word", "seq_cst"), I64(32))
        b.cbranch(b.icmp_unsigned("!=", again, seen), woken, asleep)
        b.position_at_end(asleep)
        self.futex(b, FUTEX_WAIT_PRIVATE, b.zext(signal, I64))
        b.branch(woken)
        b.position_at_end(woken)
        b.atomic_rmw("sub", self.field(b, "sleepers"), I64(1), "seq_cst")
        b.branch(wait)
        seen.add_incoming(seen, woken)

        b.position_at_end(job)
        ticket = b.atomic_rmw("add", self.field(b, "tickets"), I64(1), "monotonic")
        helpers = b.sub(self.load(b, "threads"), I64(1))
        b.cbranch(b.icmp_signed("<", ticket, helpers), help_, wait)
        seen.add_incoming(epoch, job)

        b.position_at_end(help_)
        b.call(self.run_claims, [epoch])
        b.branch(wait)
        seen.add_incoming(epoch, help_)
        return fn

    # --- the caller's side -----------------------------------------------------------------------------
    def _entry(self) -> None:
        """``tensorium_parallel_for``: serial when one thread is asked for (or the pool is busy), else start the
        missing workers, publish the job, wake sleepers, run claims, and wait for the claimed iterations."""
        fn = ir.Function(self.module, ir.FunctionType(I32, [I64, PTR, PTR, I64]), ENTRY)
        threads, body, ctx, trips = fn.args
        first = ("entry", "nonempty", "try", "owned", "grow", "spawn", "started", "publish", "wake", "work")
        entry, nonempty, try_, owned, grow, spawn, started, publish, wake, work = map(fn.append_basic_block, first)
        last = ("wait", "poll", "yield", "finish", "serial", "empty")
        wait, poll, yield_, finish, serial, empty = map(fn.append_basic_block, last)
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", trips, I64(0)), nonempty, empty)

        b.position_at_end(nonempty)
        team = self.smin(b, self.smin(b, threads, trips), I64(MAX_WORKERS + 1))
        parallel = b.and_(b.icmp_signed(">", team, I64(1)), b.icmp_signed("<=", trips, I64(MAX_TRIPS)))
        b.cbranch(parallel, try_, serial)

        b.position_at_end(try_)
        lock = b.cmpxchg(self.field(b, "busy"), I64(0), I64(1), "acquire", "monotonic")
        b.cbranch(b.extract_value(lock, 1), owned, serial)

        b.position_at_end(owned)  # start workers up to team - 1 (none exits, so the count only grows)
        b.branch(grow)
        b.position_at_end(grow)
        have = self.load(b, "workers")
        b.cbranch(b.icmp_signed("<", have, b.sub(team, I64(1))), spawn, publish)
        b.position_at_end(spawn)
        null = ir.Constant(PTR, None)
        created = b.call(self.pthread_create, [self.field(b, "thread_ids", have), null, self.worker, null])
        b.cbranch(b.icmp_signed("==", created, I32(0)), started, publish)  # no new thread: fewer helpers
        b.position_at_end(started)
        self.store(b, "workers", b.add(have, I64(1)))
        b.branch(grow)

        b.position_at_end(publish)
        have = self.load(b, "workers")
        team = self.smin(b, team, b.add(have, I64(1)))
        epoch = b.and_(b.add(b.lshr(self.load(b, "word"), I64(32)), I64(1)), I64(0xFFFFFFFF))
        for name, value in (
            ("body", b.ptrtoint(body, I64)),
            ("ctx", b.ptrtoint(ctx, I64)),
            ("trips", trips),
            ("threads", team),
            ("status", I64(0)),
            ("done", I64(0)),
            ("tickets", I64(0)),
        ):
            self.store(b, name, value)
        self.store(b, "word", b.shl(epoch, I64(32)), "seq_cst")
        self.store(b, "signal", epoch, "seq_cst")
        b.cbranch(b.icmp_signed(">", self.load(b, "sleepers", "seq_cst"), I64(0)), wake, work)
        b.position_at_end(wake)
        self.futex(b, FUTEX_WAKE_PRIVATE, b.sub(team, I64(1)))
        b.branch(work)

        b.position_at_end(work)
        b.call(self.run_claims, [epoch])
        t0 = b.call(self.cycles, [])
        b.branch(wait)

        b.position_at_end(wait)
        finished = b.icmp_signed(">=", self.load(b, "done", "acquire"), trips)
        b.cbranch(finished, finish, poll)
        b.position_at_end(poll)
        b.call(self.pause, [])
        waited = b.sub(b.call(self.cycles, []), t0)
        b.cbranch(b.icmp_unsigned("<", waited, I64(CALLER_SPIN_CYCLES)), wait, yield_)
        b.position_at_end(yield_)
        b.call(self.sched_yield, [])
        b.branch(wait)

        b.position_at_end(finish)
        status = b.trunc(self.load(b, "status"), I32)
        self.store(b, "busy", I64(0), "release")
        b.ret(status)

        b.position_at_end(serial)
        b.ret(b.call(b.inttoptr(b.ptrtoint(body, I64), self.body_type.as_pointer()), [ctx, I64(0), trips]))

        b.position_at_end(empty)
        b.ret(I32(0))
