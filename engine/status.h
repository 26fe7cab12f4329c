// Status and Result<T> are part of the public API: include/snapsink/status.h.
// This header stays so engine code keeps one include path for them.
#pragma once

#include "snapsink/status.h"
