#define noreturn _Noreturn
