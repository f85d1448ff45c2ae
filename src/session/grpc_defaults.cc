#include "session/grpc_defaults.h"

#include <absl/synchronization/mutex.h>

namespace berth::session {

void UseGrpcDefaults() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

}  // namespace berth::session
