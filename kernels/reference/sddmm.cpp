// SPDX-License-Identifier: Apache-2.0
// placeholder: to be written
