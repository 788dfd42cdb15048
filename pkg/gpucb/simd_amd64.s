//go:build !purego

#include "textflag.h"

// AVX2 forms of the loops in simd.go. Every lane performs the scalar code's
// operations in its order, with separate multiplies and adds (no fused
// multiply-add), so the results are the scalar code's bit for bit.

// func chain4AVX(v *[4]float64, l []float64, c []float64)
// v[k] −= Σ_i l[i]·c[4i+k], i taken four at a time as in dot1.
TEXT ·chain4AVX(SB), NOSPLIT, $0-56
	MOVQ    v+0(FP), DI
	MOVQ    l_base+8(FP), SI
	MOVQ    l_len+16(FP), CX
	MOVQ    c_base+32(FP), DX
	VMOVUPD (DI), Y0
	MOVQ    CX, BX
	SHRQ    $2, BX
	JZ      chtail

chloop:
	VBROADCASTSD 0(SI), Y1
	VBROADCASTSD 8(SI), Y2
	VBROADCASTSD 16(SI), Y3
	VBROADCASTSD 24(SI), Y4
	VMULPD       0(DX), Y1, Y1
	VMULPD       32(DX), Y2, Y2
	VMULPD       64(DX), Y3, Y3
	VMULPD       96(DX), Y4, Y4
	VADDPD       Y2, Y1, Y1
	VADDPD       Y4, Y3, Y3
	VADDPD       Y3, Y1, Y1
	VSUBPD       Y1, Y0, Y0
	ADDQ         $32, SI
	ADDQ         $128, DX
	DECQ         BX
	JNZ          chloop

chtail:
	ANDQ $3, CX
	JZ   chdone

chtailloop:
	VBROADCASTSD (SI), Y1
	VMULPD       (DX), Y1, Y1
	VSUBPD       Y1, Y0, Y0
	ADDQ         $8, SI
	ADDQ         $32, DX
	DECQ         CX
	JNZ          chtailloop

chdone:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func sqDistAVX(a, b []float64) float64
// sqDist: lane m holds the partial sum s_m; the tail goes to s0.
TEXT ·sqDistAVX(SB), NOSPLIT, $0-56
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	VXORPD Y0, Y0, Y0
	MOVQ   CX, BX
	SHRQ   $2, BX
	JZ     sqtail

sqloop:
	VMOVUPD (SI), Y1
	VSUBPD  (DI), Y1, Y1
	VMULPD  Y1, Y1, Y1
	VADDPD  Y1, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    BX
	JNZ     sqloop

sqtail:
	VEXTRACTF128 $1, Y0, X2
	ANDQ         $3, CX
	JZ           sqcombine

sqtailloop:
	VMOVSD (SI), X1
	VSUBSD (DI), X1, X1
	VMULSD X1, X1, X1
	VADDSD X1, X0, X0
	ADDQ   $8, SI
	ADDQ   $8, DI
	DECQ   CX
	JNZ    sqtailloop

sqcombine:
	VPERMILPD $1, X0, X1
	VADDSD    X1, X0, X0
	VPERMILPD $1, X2, X3
	VADDSD    X3, X2, X2
	VADDSD    X2, X0, X0
	VMOVSD    X0, ret+48(FP)
	VZEROUPPER
	RET

// func subRows4AVX(seg, r0, r1, r2, r3 []float64, c0, c1, c2, c3 float64)
// seg[k] −= (c0·r0[k] + c1·r1[k]) + (c2·r2[k] + c3·r3[k]) for k < len(seg)&^3.
TEXT ·subRows4AVX(SB), NOSPLIT, $0-152
	MOVQ         seg_base+0(FP), DI
	MOVQ         seg_len+8(FP), CX
	MOVQ         r0_base+24(FP), R8
	MOVQ         r1_base+48(FP), R9
	MOVQ         r2_base+72(FP), R10
	MOVQ         r3_base+96(FP), R11
	VBROADCASTSD c0+120(FP), Y4
	VBROADCASTSD c1+128(FP), Y5
	VBROADCASTSD c2+136(FP), Y6
	VBROADCASTSD c3+144(FP), Y7
	SHRQ         $2, CX
	JZ           srdone
	XORQ         AX, AX

srloop:
	VMULPD  (R8)(AX*8), Y4, Y0
	VMULPD  (R9)(AX*8), Y5, Y1
	VMULPD  (R10)(AX*8), Y6, Y2
	VMULPD  (R11)(AX*8), Y7, Y3
	VADDPD  Y1, Y0, Y0
	VADDPD  Y3, Y2, Y2
	VADDPD  Y2, Y0, Y0
	VMOVUPD (DI)(AX*8), Y1
	VSUBPD  Y0, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	DECQ    CX
	JNZ     srloop

srdone:
	VZEROUPPER
	RET

// func prefetchAVX(p []float64)
// Asks for the cache lines of p ahead of their use.
TEXT ·prefetchAVX(SB), NOSPLIT, $0-24
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	SHLQ $3, CX
	ADDQ SI, CX

pfloop:
	CMPQ       SI, CX
	JAE        pfdone
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	JMP        pfloop

pfdone:
	RET

// EXP4 sets Y7 to expNonPos of the four lanes of Y0, all in [−700, 0]: the
// operations of kernel.go in its order. DX holds cst (expConst) and AX tab
// (exp2Frac); it uses Y1–Y14 and CX.
#define EXP4 \
	VBROADCASTSD 0(DX), Y1;          \
	VMULPD       Y1, Y0, Y1;         \
	VBROADCASTSD 8(DX), Y2;          \
	VSUBPD       Y2, Y1, Y1;         \
	VCVTTPD2DQY  Y1, X3;             \
	VCVTDQ2PD    X3, Y4;             \
	VBROADCASTSD 16(DX), Y5;         \
	VMULPD       Y5, Y4, Y5;         \
	VSUBPD       Y5, Y0, Y5;         \
	VBROADCASTSD 24(DX), Y6;         \
	VMULPD       Y6, Y4, Y6;         \
	VSUBPD       Y6, Y5, Y5;         \
	VMULPD       Y5, Y5, Y6;         \
	VBROADCASTSD 32(DX), Y7;         \
	VADDPD       Y5, Y7, Y7;         \
	VBROADCASTSD 40(DX), Y8;         \
	VMULPD       Y8, Y5, Y8;         \
	VADDPD       Y2, Y8, Y8;         \
	VMULPD       Y8, Y6, Y8;         \
	VADDPD       Y8, Y7, Y7;         \
	VMULPD       Y6, Y6, Y9;         \
	VBROADCASTSD 56(DX), Y10;        \
	VMULPD       Y10, Y5, Y10;       \
	VBROADCASTSD 48(DX), Y11;        \
	VADDPD       Y10, Y11, Y10;      \
	VBROADCASTSD 64(DX), Y11;        \
	VMULPD       Y11, Y6, Y11;       \
	VADDPD       Y11, Y10, Y10;      \
	VMULPD       Y10, Y9, Y9;        \
	VADDPD       Y9, Y7, Y7;         \
	MOVL         $31, CX;            \
	VMOVD        CX, X12;            \
	VPBROADCASTD X12, X12;           \
	VPAND        X12, X3, X12;       \
	VPCMPEQQ     Y14, Y14, Y14;      \
	VXORPD       Y13, Y13, Y13;      \
	VGATHERDPD   Y14, (AX)(X12*8), Y13; \
	VMULPD       Y13, Y7, Y7;        \
	VPSRAD       $5, X3, X12;        \
	MOVL         $1023, CX;          \
	VMOVD        CX, X13;            \
	VPBROADCASTD X13, X13;           \
	VPADDD       X13, X12, X12;      \
	VPMOVSXDQ    X12, Y12;           \
	VPSLLQ       $52, Y12, Y12;      \
	VMULPD       Y12, Y7, Y7

// SQ4 sets Y5 to the four sqDist of the DI coordinates at SI against those at
// R8, R9, R10 and R11: accumulator k (Y1–Y4) holds candidate k's partial sums
// s0..s3, a tail element is added to s0 alone (as [d², 0, 0, 0]), and the four
// (s0 + s1) + (s2 + s3) are formed together. SQ4INIT, then SQ4BLOCK DI/4 times,
// SQ4TAIL DI%4 times, and SQ4COMBINE; BX is the byte offset. Y0–Y8 are used.
#define SQ4INIT \
	VXORPD Y1, Y1, Y1; \
	VXORPD Y2, Y2, Y2; \
	VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; \
	XORQ   BX, BX

#define SQ4BLOCK \
	VMOVUPD (SI)(BX*1), Y0;      \
	VSUBPD  (R8)(BX*1), Y0, Y5;  \
	VSUBPD  (R9)(BX*1), Y0, Y6;  \
	VSUBPD  (R10)(BX*1), Y0, Y7; \
	VSUBPD  (R11)(BX*1), Y0, Y8; \
	VMULPD  Y5, Y5, Y5;          \
	VMULPD  Y6, Y6, Y6;          \
	VMULPD  Y7, Y7, Y7;          \
	VMULPD  Y8, Y8, Y8;          \
	VADDPD  Y5, Y1, Y1;          \
	VADDPD  Y6, Y2, Y2;          \
	VADDPD  Y7, Y3, Y3;          \
	VADDPD  Y8, Y4, Y4;          \
	ADDQ    $32, BX

#define SQ4TAIL \
	VMOVSD (SI)(BX*1), X0;      \
	VSUBSD (R8)(BX*1), X0, X5;  \
	VSUBSD (R9)(BX*1), X0, X6;  \
	VSUBSD (R10)(BX*1), X0, X7; \
	VSUBSD (R11)(BX*1), X0, X8; \
	VMULSD X5, X5, X5;          \
	VMULSD X6, X6, X6;          \
	VMULSD X7, X7, X7;          \
	VMULSD X8, X8, X8;          \
	VADDPD Y5, Y1, Y1;          \
	VADDPD Y6, Y2, Y2;          \
	VADDPD Y7, Y3, Y3;          \
	VADDPD Y8, Y4, Y4;          \
	ADDQ   $8, BX

#define SQ4COMBINE \
	VHADDPD    Y2, Y1, Y1;        \
	VHADDPD    Y4, Y3, Y3;        \
	VPERM2F128 $0x20, Y3, Y1, Y5; \
	VPERM2F128 $0x31, Y3, Y1, Y6; \
	VADDPD     Y6, Y5, Y5

// CANDS4 points R8–R11 at the coordinates kc[off[k]:] (DX = kc, AX = off).
#define CANDS4 \
	MOVQ 0(AX), R8;          \
	MOVQ 8(AX), R9;          \
	MOVQ 16(AX), R10;        \
	MOVQ 24(AX), R11;        \
	LEAQ (DX)(R8*8), R8;     \
	LEAQ (DX)(R9*8), R9;     \
	LEAQ (DX)(R10*8), R10;   \
	LEAQ (DX)(R11*8), R11

// func exp4AVX(x *[4]float64, tab *[32]float64, cst *[10]float64)
// expNonPos for four arguments in [−700, 0] (others give garbage; the caller
// replaces them).
TEXT ·exp4AVX(SB), NOSPLIT, $0-24
	MOVQ    x+0(FP), DI
	MOVQ    tab+8(FP), AX
	MOVQ    cst+16(FP), DX
	VMOVUPD (DI), Y0
	EXP4
	VMOVUPD Y7, (DI)
	VZEROUPPER
	RET

// func sqDist4AVX(out *[4]float64, a, kc []float64, off *[4]int)
// out[k] = sqDist(a, kc[off[k]:off[k]+len(a)]).
TEXT ·sqDist4AVX(SB), NOSPLIT, $0-64
	MOVQ    a_base+8(FP), SI
	MOVQ    a_len+16(FP), DI
	MOVQ    kc_base+32(FP), DX
	MOVQ    off+56(FP), AX
	CANDS4
	SQ4INIT
	MOVQ DI, CX
	SHRQ $2, CX
	JZ   sq4tail

sq4loop:
	SQ4BLOCK
	DECQ CX
	JNZ  sq4loop

sq4tail:
	MOVQ DI, CX
	ANDQ $3, CX
	JZ   sq4combine

sq4tailloop:
	SQ4TAIL
	DECQ CX
	JNZ  sq4tailloop

sq4combine:
	SQ4COMBINE
	MOVQ    out+0(FP), DI
	VMOVUPD Y5, (DI)
	VZEROUPPER
	RET

// func seKernelRows4AVX(out, rows, kc []float64, off *[4]int, roff []int, sv, c float64, tab *[32]float64, cst *[10]float64, dim int) int
// For each r < len(roff): out[4r+k] = sv·expNonPos(c·sqDist(rows[roff[r]:][:dim],
// kc[off[k]:][:dim])), sqDist4AVX's then exp4AVX's operations. It returns the
// number of rows done: a row with an argument outside [−700, 0] (or NaN) stops it
// before anything of that row is stored.
TEXT ·seKernelRows4AVX(SB), NOSPLIT, $0-152
	MOVQ kc_base+48(FP), DX
	MOVQ off+72(FP), AX
	CANDS4
	MOVQ roff_base+80(FP), R12
	XORQ R13, R13

skrow:
	CMPQ         R13, roff_len+88(FP)
	JAE          skdone
	MOVQ         (R12)(R13*8), SI
	MOVQ         rows_base+24(FP), DX
	LEAQ         (DX)(SI*8), SI
	MOVQ         dim+136(FP), DI
	SQ4INIT
	MOVQ DI, CX
	SHRQ $2, CX
	JZ   sktail

skloop:
	SQ4BLOCK
	DECQ CX
	JNZ  skloop

sktail:
	MOVQ DI, CX
	ANDQ $3, CX
	JZ   skcombine

sktailloop:
	SQ4TAIL
	DECQ CX
	JNZ  sktailloop

skcombine:
	SQ4COMBINE
	VBROADCASTSD c+112(FP), Y0
	VMULPD       Y5, Y0, Y0
	MOVQ         tab+120(FP), AX
	MOVQ         cst+128(FP), DX
	VBROADCASTSD 72(DX), Y9
	VCMPPD       $0x1d, Y9, Y0, Y10
	VXORPD       Y9, Y9, Y9
	VCMPPD       $0x12, Y9, Y0, Y11
	VANDPD       Y11, Y10, Y10
	VMOVMSKPD    Y10, CX
	CMPQ         CX, $15
	JNE          skdone
	EXP4
	VBROADCASTSD sv+104(FP), Y0
	VMULPD       Y7, Y0, Y7
	MOVQ         out_base+0(FP), DI
	MOVQ         R13, CX
	SHLQ         $5, CX
	VMOVUPD      Y7, (DI)(CX*1)
	INCQ         R13
	JMP          skrow

skdone:
	VZEROUPPER
	MOVQ R13, ret+144(FP)
	RET
