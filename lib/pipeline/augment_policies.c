/*
 * augment_policies.c - AutoAugment's learned sub-policies, as torchvision
 * 0.14 lists them (AutoAugment._get_policies): for each sub-policy two
 * (op, probability, magnitude bin of 10) steps, bin -1 for ops without a
 * magnitude.  Order is torchvision's: the index drawn means the same
 * sub-policy.
 */
#include "refurb/augment.h"

static const struct rfb_autoaug_step imagenet[][2] = {
	{ { RFB_OP_POSTERIZE, 0.4, 8 }, { RFB_OP_ROTATE, 0.6, 9 } },
	{ { RFB_OP_SOLARIZE, 0.6, 5 }, { RFB_OP_AUTOCONTRAST, 0.6, -1 } },
	{ { RFB_OP_EQUALIZE, 0.8, -1 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_POSTERIZE, 0.6, 7 }, { RFB_OP_POSTERIZE, 0.6, 6 } },
	{ { RFB_OP_EQUALIZE, 0.4, -1 }, { RFB_OP_SOLARIZE, 0.2, 4 } },
	{ { RFB_OP_EQUALIZE, 0.4, -1 }, { RFB_OP_ROTATE, 0.8, 8 } },
	{ { RFB_OP_SOLARIZE, 0.6, 3 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_POSTERIZE, 0.8, 5 }, { RFB_OP_EQUALIZE, 1.0, -1 } },
	{ { RFB_OP_ROTATE, 0.2, 3 }, { RFB_OP_SOLARIZE, 0.6, 8 } },
	{ { RFB_OP_EQUALIZE, 0.6, -1 }, { RFB_OP_POSTERIZE, 0.4, 6 } },
	{ { RFB_OP_ROTATE, 0.8, 8 }, { RFB_OP_COLOR, 0.4, 0 } },
	{ { RFB_OP_ROTATE, 0.4, 9 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_EQUALIZE, 0.0, -1 }, { RFB_OP_EQUALIZE, 0.8, -1 } },
	{ { RFB_OP_INVERT, 0.6, -1 }, { RFB_OP_EQUALIZE, 1.0, -1 } },
	{ { RFB_OP_COLOR, 0.6, 4 }, { RFB_OP_CONTRAST, 1.0, 8 } },
	{ { RFB_OP_ROTATE, 0.8, 8 }, { RFB_OP_COLOR, 1.0, 2 } },
	{ { RFB_OP_COLOR, 0.8, 8 }, { RFB_OP_SOLARIZE, 0.8, 7 } },
	{ { RFB_OP_SHARPNESS, 0.4, 7 }, { RFB_OP_INVERT, 0.6, -1 } },
	{ { RFB_OP_SHEAR_X, 0.6, 5 }, { RFB_OP_EQUALIZE, 1.0, -1 } },
	{ { RFB_OP_COLOR, 0.4, 0 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_EQUALIZE, 0.4, -1 }, { RFB_OP_SOLARIZE, 0.2, 4 } },
	{ { RFB_OP_SOLARIZE, 0.6, 5 }, { RFB_OP_AUTOCONTRAST, 0.6, -1 } },
	{ { RFB_OP_INVERT, 0.6, -1 }, { RFB_OP_EQUALIZE, 1.0, -1 } },
	{ { RFB_OP_COLOR, 0.6, 4 }, { RFB_OP_CONTRAST, 1.0, 8 } },
	{ { RFB_OP_EQUALIZE, 0.8, -1 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
};

static const struct rfb_autoaug_step cifar10[][2] = {
	{ { RFB_OP_INVERT, 0.1, -1 }, { RFB_OP_CONTRAST, 0.2, 6 } },
	{ { RFB_OP_ROTATE, 0.7, 2 }, { RFB_OP_TRANSLATE_X, 0.3, 9 } },
	{ { RFB_OP_SHARPNESS, 0.8, 1 }, { RFB_OP_SHARPNESS, 0.9, 3 } },
	{ { RFB_OP_SHEAR_Y, 0.5, 8 }, { RFB_OP_TRANSLATE_Y, 0.7, 9 } },
	{ { RFB_OP_AUTOCONTRAST, 0.5, -1 }, { RFB_OP_EQUALIZE, 0.9, -1 } },
	{ { RFB_OP_SHEAR_Y, 0.2, 7 }, { RFB_OP_POSTERIZE, 0.3, 7 } },
	{ { RFB_OP_COLOR, 0.4, 3 }, { RFB_OP_BRIGHTNESS, 0.6, 7 } },
	{ { RFB_OP_SHARPNESS, 0.3, 9 }, { RFB_OP_BRIGHTNESS, 0.7, 9 } },
	{ { RFB_OP_EQUALIZE, 0.6, -1 }, { RFB_OP_EQUALIZE, 0.5, -1 } },
	{ { RFB_OP_CONTRAST, 0.6, 7 }, { RFB_OP_SHARPNESS, 0.6, 5 } },
	{ { RFB_OP_COLOR, 0.7, 7 }, { RFB_OP_TRANSLATE_X, 0.5, 8 } },
	{ { RFB_OP_EQUALIZE, 0.3, -1 }, { RFB_OP_AUTOCONTRAST, 0.4, -1 } },
	{ { RFB_OP_TRANSLATE_Y, 0.4, 3 }, { RFB_OP_SHARPNESS, 0.2, 6 } },
	{ { RFB_OP_BRIGHTNESS, 0.9, 6 }, { RFB_OP_COLOR, 0.2, 8 } },
	{ { RFB_OP_SOLARIZE, 0.5, 2 }, { RFB_OP_INVERT, 0.0, -1 } },
	{ { RFB_OP_EQUALIZE, 0.2, -1 }, { RFB_OP_AUTOCONTRAST, 0.6, -1 } },
	{ { RFB_OP_EQUALIZE, 0.2, -1 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_COLOR, 0.9, 9 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_AUTOCONTRAST, 0.8, -1 }, { RFB_OP_SOLARIZE, 0.2, 8 } },
	{ { RFB_OP_BRIGHTNESS, 0.1, 3 }, { RFB_OP_COLOR, 0.7, 0 } },
	{ { RFB_OP_SOLARIZE, 0.4, 5 }, { RFB_OP_AUTOCONTRAST, 0.9, -1 } },
	{ { RFB_OP_TRANSLATE_Y, 0.9, 9 }, { RFB_OP_TRANSLATE_Y, 0.7, 9 } },
	{ { RFB_OP_AUTOCONTRAST, 0.9, -1 }, { RFB_OP_SOLARIZE, 0.8, 3 } },
	{ { RFB_OP_EQUALIZE, 0.8, -1 }, { RFB_OP_INVERT, 0.1, -1 } },
	{ { RFB_OP_TRANSLATE_Y, 0.7, 9 }, { RFB_OP_AUTOCONTRAST, 0.9, -1 } },
};

static const struct rfb_autoaug_step svhn[][2] = {
	{ { RFB_OP_SHEAR_X, 0.9, 4 }, { RFB_OP_INVERT, 0.2, -1 } },
	{ { RFB_OP_SHEAR_Y, 0.9, 8 }, { RFB_OP_INVERT, 0.7, -1 } },
	{ { RFB_OP_EQUALIZE, 0.6, -1 }, { RFB_OP_SOLARIZE, 0.6, 6 } },
	{ { RFB_OP_INVERT, 0.9, -1 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_EQUALIZE, 0.6, -1 }, { RFB_OP_ROTATE, 0.9, 3 } },
	{ { RFB_OP_SHEAR_X, 0.9, 4 }, { RFB_OP_AUTOCONTRAST, 0.8, -1 } },
	{ { RFB_OP_SHEAR_Y, 0.9, 8 }, { RFB_OP_INVERT, 0.4, -1 } },
	{ { RFB_OP_SHEAR_Y, 0.9, 5 }, { RFB_OP_SOLARIZE, 0.2, 6 } },
	{ { RFB_OP_INVERT, 0.9, -1 }, { RFB_OP_AUTOCONTRAST, 0.8, -1 } },
	{ { RFB_OP_EQUALIZE, 0.6, -1 }, { RFB_OP_ROTATE, 0.9, 3 } },
	{ { RFB_OP_SHEAR_X, 0.9, 4 }, { RFB_OP_SOLARIZE, 0.3, 3 } },
	{ { RFB_OP_SHEAR_Y, 0.8, 8 }, { RFB_OP_INVERT, 0.7, -1 } },
	{ { RFB_OP_EQUALIZE, 0.9, -1 }, { RFB_OP_TRANSLATE_Y, 0.6, 6 } },
	{ { RFB_OP_INVERT, 0.9, -1 }, { RFB_OP_EQUALIZE, 0.6, -1 } },
	{ { RFB_OP_CONTRAST, 0.3, 3 }, { RFB_OP_ROTATE, 0.8, 4 } },
	{ { RFB_OP_INVERT, 0.8, -1 }, { RFB_OP_TRANSLATE_Y, 0.0, 2 } },
	{ { RFB_OP_SHEAR_Y, 0.7, 6 }, { RFB_OP_SOLARIZE, 0.4, 8 } },
	{ { RFB_OP_INVERT, 0.6, -1 }, { RFB_OP_ROTATE, 0.8, 4 } },
	{ { RFB_OP_SHEAR_Y, 0.3, 7 }, { RFB_OP_TRANSLATE_X, 0.9, 3 } },
	{ { RFB_OP_SHEAR_X, 0.1, 6 }, { RFB_OP_INVERT, 0.6, -1 } },
	{ { RFB_OP_SOLARIZE, 0.7, 2 }, { RFB_OP_TRANSLATE_Y, 0.6, 7 } },
	{ { RFB_OP_SHEAR_Y, 0.8, 4 }, { RFB_OP_INVERT, 0.8, -1 } },
	{ { RFB_OP_SHEAR_X, 0.7, 9 }, { RFB_OP_TRANSLATE_Y, 0.8, 3 } },
	{ { RFB_OP_SHEAR_Y, 0.8, 5 }, { RFB_OP_AUTOCONTRAST, 0.7, -1 } },
	{ { RFB_OP_SHEAR_X, 0.7, 2 }, { RFB_OP_INVERT, 0.1, -1 } },
};

const struct rfb_enum_name rfb_autoaug_policy_names[] = {
	{ RFB_AUTOAUG_IMAGENET, "imagenet" },
	{ RFB_AUTOAUG_CIFAR10, "cifar10" },
	{ RFB_AUTOAUG_SVHN, "svhn" },
	{ 0, NULL },
};

const char *rfb_autoaug_policy_name(enum rfb_autoaug_policy policy)
{
	return rfb_enum_name(rfb_autoaug_policy_names, (int)policy);
}

int rfb_autoaug_count(enum rfb_autoaug_policy policy)
{
	switch (policy) {
	case RFB_AUTOAUG_IMAGENET: return (int)(sizeof imagenet / sizeof imagenet[0]);
	case RFB_AUTOAUG_CIFAR10: return (int)(sizeof cifar10 / sizeof cifar10[0]);
	case RFB_AUTOAUG_SVHN: return (int)(sizeof svhn / sizeof svhn[0]);
	}
	return 0;
}

const struct rfb_autoaug_step *rfb_autoaug_subpolicy(enum rfb_autoaug_policy policy,
						     int index)
{
	if (index < 0 || index >= rfb_autoaug_count(policy))
		return NULL;
	switch (policy) {
	case RFB_AUTOAUG_IMAGENET: return imagenet[index];
	case RFB_AUTOAUG_CIFAR10: return cifar10[index];
	case RFB_AUTOAUG_SVHN: return svhn[index];
	}
	return NULL;
}
