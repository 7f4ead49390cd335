// SPDX-License-Identifier: Apache-2.0
// Everything a user of SparsePort includes.
#pragma once

#include "sparseport/backward.hpp"
#include "sparseport/context.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/plan.hpp"
#include "sparseport/plugin_abi.h"
#include "sparseport/version.hpp"
#include "sparseport/views.hpp"
