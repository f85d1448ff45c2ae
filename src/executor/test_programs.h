// Programs the tests of resource limits run as tasks (python3 -c), shared
// by the executor's tests and berth-node's end-to-end tests.
#pragma once

namespace berth::executor {

// Forks up to 20 children, each waiting for the parent's end; exits 3,
// saying how many it made, when a fork fails.
constexpr char kForkUntilRefused[] = R"py(import os, sys
r, w = os.pipe()
n = 0
try:
    while n < 20:
        if os.fork() == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        n += 1
except OSError as e:
    print(f"forked {n}, then: {e.strerror}", flush=True)
    sys.exit(3)
print(f"forked {n}", flush=True)
)py";

}  // namespace berth::executor
