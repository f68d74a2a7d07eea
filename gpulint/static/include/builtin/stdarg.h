
#ifndef __GPULINT_STDARG_H
#define __GPULINT_STDARG_H
typedef __builtin_va_list va_list;
typedef __builtin_va_list __gnuc_va_list;
#define __GNUC_VA_LIST 1
#define va_start(ap, param) __builtin_va_start(ap, param)
#define va_end(ap) __builtin_va_end(ap)
#define va_arg(ap, type) __builtin_va_arg(ap, type)
#define __va_copy(d, s) __builtin_va_copy(d, s)
#define va_copy(d, s) __builtin_va_copy(d, s)
#endif
#undef __need___va_list
#undef __need_va_list
