// SPDX-License-Identifier: Apache-2.0
// placeholder: to be written
int main() { return 0; }
