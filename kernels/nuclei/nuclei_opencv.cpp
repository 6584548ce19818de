// plb-nuclei's image operations, OpenCV's (core and imgproc), behind the
// C functions of nuclei.h. Each wraps the caller's T x T buffers in
// cv::Mat headers (no copies) and returns 0, or PLB_EDEVICE with OpenCV's
// exception caught (a kernel's error, not an abort).
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "kernels/nuclei/nuclei.h"

namespace {

cv::Mat u8(const uint8_t *p, int T, int ch = 1)
{
	return cv::Mat(T, T, CV_8UC(ch), const_cast<uint8_t *>(p));
}

template <class F> int guard(F f)
{
	try {
		f();
		return 0;
	} catch (const cv::Exception &) {
		return PLB_EDEVICE;
	} catch (...) {
		return PLB_EDEVICE;
	}
}

}  // namespace

extern "C" {

// A PU runs one task a core: OpenCV's own threads would take the others'.
void nuclei_cv_init(void)
{
	cv::setNumThreads(0);
}

int nuclei_cv_gray(const uint8_t *rgb, uint8_t *gray, int T)
{
	return guard([&] {
		cv::Mat g = u8(gray, T);
		cv::cvtColor(u8(rgb, T, 3), g, cv::COLOR_RGB2GRAY);
	});
}

int nuclei_cv_open(const uint8_t *src, uint8_t *dst, int T, int r)
{
	return guard([&] {
		cv::Mat d = u8(dst, T);
		cv::Mat k = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(2 * r + 1, 2 * r + 1));
		cv::morphologyEx(u8(src, T), d, cv::MORPH_OPEN, k);
	});
}

// Morphological reconstruction by dilation of marker under mask: the
// marker grown (3 x 3 dilations, each cut to the mask) until it stops
// changing. Shapes the opening left a seed in come back whole; what it
// removed (specks, thin bits) stays away.
int nuclei_cv_recon(const uint8_t *marker, const uint8_t *mask, uint8_t *dst, int T)
{
	return guard([&] {
		cv::Mat m = u8(mask, T), d = u8(dst, T), prev;
		cv::min(u8(marker, T), m, d);
		cv::Mat k = cv::getStructuringElement(cv::MORPH_RECT, cv::Size(3, 3));
		for (int i = 0; i < 4 * T; i++) {
			d.copyTo(prev);
			cv::dilate(d, d, k);
			cv::min(d, m, d);
			if (cv::countNonZero(d != prev) == 0)
				break;
		}
	});
}

int nuclei_cv_threshold(const uint8_t *src, uint8_t *mask, int T)
{
	return guard([&] {
		cv::Mat d = u8(mask, T);
		cv::threshold(u8(src, T), d, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
	});
}

// Holes: background the flood from the tile's edge does not reach.
int nuclei_cv_fill_holes(const uint8_t *mask, uint8_t *dst, int T)
{
	return guard([&] {
		cv::Mat m = u8(mask, T), d = u8(dst, T), flood;
		cv::copyMakeBorder(m, flood, 1, 1, 1, 1, cv::BORDER_CONSTANT, 0);
		cv::floodFill(flood, cv::Point(0, 0), 255);
		cv::Mat holes = ~flood(cv::Rect(1, 1, T, T));
		cv::bitwise_or(m, holes, d);
	});
}

int nuclei_cv_area(const uint8_t *mask, uint8_t *dst, int T, int amin, int amax)
{
	return guard([&] {
		cv::Mat lab, st, ce, d = u8(dst, T);
		int n = cv::connectedComponentsWithStats(u8(mask, T), lab, st, ce, 8, CV_32S);
		std::vector<uint8_t> keep((size_t)n, 0);
		for (int i = 1; i < n; i++) {
			int a = st.at<int>(i, cv::CC_STAT_AREA);
			keep[(size_t)i] = a >= amin && a <= amax;
		}
		for (int y = 0; y < T; y++)
			for (int x = 0; x < T; x++)
				d.at<uint8_t>(y, x) = keep[(size_t)lab.at<int>(y, x)] ? 255 : 0;
	});
}

int nuclei_cv_distance(const uint8_t *mask, float *dist, int T)
{
	return guard([&] {
		cv::Mat d(T, T, CV_32F, dist);
		cv::distanceTransform(u8(mask, T), d, cv::DIST_L2, 5, CV_32F);
	});
}

int nuclei_cv_label(const uint8_t *mask, int32_t *labels, int32_t *stats, double *cent, int max,
		    int T)
{
	int n = 0;
	int rc = guard([&] {
		cv::Mat lab(T, T, CV_32S, labels), st, ce;
		n = cv::connectedComponentsWithStats(u8(mask, T), lab, st, ce, 8, CV_32S) - 1;
		for (int i = 0; i <= n && i <= max; i++) {
			for (int k = 0; k < 5; k++)
				stats[i * 5 + k] = st.at<int>(i, k);
			cent[i * 2] = ce.at<double>(i, 0);
			cent[i * 2 + 1] = ce.at<double>(i, 1);
		}
	});
	return rc ? rc : n;
}

int nuclei_cv_sobel(const uint8_t *gray, float *grad, int T)
{
	return guard([&] {
		cv::Mat gx, gy, g(T, T, CV_32F, grad);
		cv::Sobel(u8(gray, T), gx, CV_32F, 1, 0, 3);
		cv::Sobel(u8(gray, T), gy, CV_32F, 0, 1, 3);
		cv::magnitude(gx, gy, g);
	});
}

}  // extern "C"
