// berth-exec: the task shim of berth-node (task_shim.h).
#include "executor/task_shim.h"

int main(int argc, char** argv) { return berth::executor::RunTaskShim(argc, argv); }
